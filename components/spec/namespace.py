"""The experiment's namespace as a stack names it: one tfk8s creates, or a team's it shares."""

from __future__ import annotations

from pydantic import Field, model_validator

from .model_base import StackModel
from .quantities import DnsLabel

# The cluster's own namespaces: never an experiment's. `default` may be a team's existing one.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
SHARED_DEFAULT_NAMESPACE = "default"


class NamespaceSpec(StackModel):
    name: DnsLabel = Field(description="the namespace's name")
    existing: bool = Field(
        default=False,
        strict=True,
        description="true: the namespace exists already (a team's); tfk8s creates only the experiment's own "
        "objects there, named after the stack, and never creates, changes or deletes the namespace or anything "
        "else in it; false: tfk8s creates the namespace and `pulumi destroy` deletes it",
    )

    @model_validator(mode="after")
    def _not_the_clusters(self) -> "NamespaceSpec":
        if self.name in SYSTEM_NAMESPACES:
            raise ValueError(
                f"'{self.name}' belongs to the cluster itself; name the team's namespace or a new one "
                "(default tf-<stack>)"
            )
        if self.name == SHARED_DEFAULT_NAMESPACE and not self.existing:
            raise ValueError(
                f"'{self.name}' exists on every cluster and tfk8s would delete it with the experiment; "
                "write {name: default, existing: true} to share it, or name a new one (default tf-<stack>)"
            )
        return self
