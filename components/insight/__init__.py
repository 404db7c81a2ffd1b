"""The judging of an experiment from its figures (pure: no Pulumi, no Kubernetes client, no TensorFlow).

measurements.py: what a window of samples measured; ps_balance.py: the one hot-PS rule;
bottleneck_figures.py and bottleneck_rules.py: the figures and the rules that name a bottleneck;
next_experiment.py: the stack changes each bottleneck calls for; bottleneck.py: `diagnose()`, the
finding. report_findings.py and report_figures.py: what a report (trainer/report/) makes of its
runs. `diagnose` (live/, cli/), `top` and the reports read these same modules.
"""
