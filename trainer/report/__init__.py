"""`python -m trainer.report`: run experiments with the local launcher and report them side by side.

    python -m trainer.report [--stacks scene1-case2 scene2-case2] [--partitions none auto] [--steps 200]
    python -m trainer.report --cluster <stack> [<stack> ...] [--seconds N] [--kubeconfig FILE]

Each stack is validated by the project's schema and scaled to this machine as
`trainer.local --stack` does, with at least 3 PS so that a hot PS can show.
Every (stack, partition) pair is one run, with a progress bar. The report goes
to `reports/<name>/`: `report.json` (every run's figures), `report.md` (a table
per run; for every two runs that differ in one thing, what that changed; the
finding first) and PNG plots: PS CPU seconds per PS for each run (the seeds'
monitoring screenshot, reproduced), table rows per PS, examples/s, loss. Each
run's bottleneck, by the rules of `python -m components diagnose`, is printed
and written as a list of findings (components/insight/report_findings.py;
local_diagnosis.py for a local run).

With `--cluster`, nothing runs here: each stack's experiment, already applied
to a cluster, is sampled from its real pods while it runs (cluster.py),
and the same files are written, plus `ps_cpu_over_time.png` (each PS's CPU
cores as the pods used them).

Rows and bytes per PS are deterministic: bytes from the table's shards, rows
from replaying the run's first batches through its partitioning in this
process (replay.py). Timings (CPU seconds, examples/s) vary from run to run.

The report is a tool beside the pods' program, as the local launcher is (trainer/local/): it runs
the trainer and judges the runs by the rules in components/insight/, which it imports; no pod
imports it.
"""
