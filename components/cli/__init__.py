"""The command line (`python -m components`): main.py, the plan table (plan_view.py), two
experiments side by side (diff.py)."""
