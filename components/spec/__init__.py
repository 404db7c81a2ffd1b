"""The validated spec: what a stack file may say, checked once, as frozen models.

quantities.py: Kubernetes quantities and names as a stack file writes them;
ratio.py: 'P:W' ratios; models.py: the pools, the roles, the cluster and the
stack (pydantic); placement_rules.py: what each placement asks of the pools;
cross_checks.py: the rules that relate pools to the cluster; loading.py: a
stack's `tfk8s:*` values to a `StackConfig` or one `StackConfigError`;
sizing.py: memory and bytes derived from the model; stack_files.py: the
project's stack files, read with user_files.py (UTF-8, or one reason why not) and
strict_yaml.py (every key once); reference.py: the stack file reference, generated.
Nothing here plans or touches Kubernetes or Pulumi.
"""
