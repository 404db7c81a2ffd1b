"""tfk8s trainer: the TensorFlow program every pod of an experiment runs.

`trainer.settings` is importable without TensorFlow; the Pulumi program uses it
to validate `tfk8s:trainer` and to size parameter-server memory.
"""
