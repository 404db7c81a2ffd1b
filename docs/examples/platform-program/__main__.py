"""A platform team's own Pulumi program: tfk8s experiments from the team's own config.

The team keeps one config key per experiment family (`ads:models`) and its own
cluster provider; tfk8s's TFExperiment component does the rest, with the same
validation as a tfk8s stack file. Run it like any Pulumi program
(`pulumi up` in this folder, with tfk8s importable: here, from the checkout
two folders up).
"""

import sys
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

sys.path.insert(0, str(Path(__file__).resolve().parents[2].parent))  # the tfk8s checkout

from components.tf_experiment import TFExperiment, TFExperimentArgs  # noqa: E402

config = pulumi.Config("ads")
servers = config.get_object("servers") or ["srv-00", "srv-01", "srv-02", "srv-03"]
models = config.get_object("models") or {"ranking": {"rows": 2_000_000, "ps": 4}, "ctr": {"rows": 500_000, "ps": 2}}

# One provider for the team's training cluster: a kubeconfig context per stack.
cluster = k8s.Provider("training", context=config.get("context") or "training")

for model, sizes in models.items():
    experiment = TFExperiment(
        f"{model}-{pulumi.get_stack()}",
        TFExperimentArgs(
            node_pools=[{"name": "servers", "nodes": servers}],
            cluster={
                "placement": "colocated",
                "ps": {"replicas": sizes["ps"], "pool": "servers"},
                "workers": {"replicas": 10 * len(servers), "pool": "servers"},
            },
            trainer={"embeddingRows": sizes["rows"], "partition": "auto"},
        ),
        opts=pulumi.ResourceOptions(providers=[cluster]),
    )
    pulumi.export(f"{model}", experiment.outputs)
