"""tfk8s: one TensorFlow parameter-server experiment per Pulumi stack."""

from components.resources.entry_point import main

main()
