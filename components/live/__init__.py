"""A live cluster, read: the experiment's phase (phase.py, pure), its status against the plan
(status.py), each task's CPU and memory and the chief's progress (usage.py pure, top.py)."""
