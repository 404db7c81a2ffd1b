"""Pulumi resources: the components (node_pool.py, tf_cluster.py, tf_experiment.py), a manifest
registered as its pulumi_kubernetes resource (kube.py), and the Pulumi entry point (entry_point.py)."""
