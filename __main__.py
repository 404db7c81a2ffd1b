"""tfk8s: one TensorFlow parameter-server experiment per Pulumi stack."""

from components.program import main

main()
