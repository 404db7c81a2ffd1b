"""Migration into tfk8s: a Kubeflow `kubeflow.org/v1` TFJob to a stack file (`import-tfjob`).

- tfjob.py reads the manifest: the TFJob, its roles and each role's container, and refuses
  what is not a TFJob;
- carry.py turns those roles into the `tfk8s:*` values of a stack, and lists every field it
  cannot carry with what tfk8s does instead;
- stack_yaml.py writes the values as the seed stacks are written: commented, small mappings on one line.

Nothing here talks to a cluster or to Pulumi; the stack it writes is checked by the same
loader as any other (components/spec).
"""
