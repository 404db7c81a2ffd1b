"""The plan: who runs where (planner.py), in which workload (workloads.py), under which names
(labels.py), joining which TF cluster (tf_config.py), with the trainer's source (trainer_bundle.py);
experiment.py derives it all once from a validated spec. Pure: no Kubernetes objects, no Pulumi."""
