"""A platform team's own Pulumi program: its cluster's provider, and one tfk8s experiment on it."""

import pulumi
import pulumi_kubernetes as kubernetes

from tfk8s import TFExperiment, TFExperimentArgs

config = pulumi.Config()
# The servers the experiment may use: existing nodes, which tfk8s labels for it.
servers = config.get_object("servers") or ["srv-00", "srv-01"]

# The team's provider (here: $KUBECONFIG's current context); every resource of the experiment uses it.
cluster = kubernetes.Provider("team-cluster")

ranking = TFExperiment(
    "ranking",
    TFExperimentArgs(
        node_pools=[{"name": "servers", "nodes": servers}],
        cluster={
            "placement": "colocated",
            "ps": {"replicas": len(servers), "pool": "servers"},
            "workers": {"replicas": 4 * len(servers), "pool": "servers"},
        },
        trainer={"partition": "auto"},
    ),
    opts=pulumi.ResourceOptions(providers=[cluster]),
)

pulumi.export("namespace", ranking.namespace)
