"""An experiment's Kubernetes objects as plain dicts: its pods (manifests.py), its JobSet
(jobset.py), every object in apply order (experiment_objects.py), as YAML files (render.py);
loading.py gives the experiment of a stack, refused when its objects could not exist. No Pulumi."""
