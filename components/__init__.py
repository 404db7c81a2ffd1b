"""tfk8s: TensorFlow parameter-server experiments on Kubernetes as Pulumi components, in layers
(docs/architecture.md): spec/, plan/, objects/, access/, resources/, live/, migrate/, cli/."""
