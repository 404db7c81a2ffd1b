"""The stack file's node pools: the servers an experiment may use, and their GPUs."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from .kubernetes_limits import LABEL_VALUE_MAX, LABEL_VALUE_PATTERN
from .model_base import StackModel as _Model
from .quantities import DnsLabel, DnsSubdomain
from .trainer_contract import LARGEST_NUMBER as INT32_MAX

# Who labels a GPU pool's nodes with their GPU product: tfk8s (its own label, on the nodes
# it names) or NVIDIA GPU Feature Discovery (nvidia.com/gpu.product, which GFD owns).
GpuLabeller = Literal["tfk8s", "gfd"]


class GpuSpec(_Model):
    product: str = Field(
        pattern=LABEL_VALUE_PATTERN,
        min_length=1,
        max_length=LABEL_VALUE_MAX,
        description="GPU model the GPU workers are scheduled on (e.g. Tesla-P40; with GFD: its product label's value)",
    )
    per_node: int = Field(strict=True, ge=1, le=INT32_MAX, description="GPUs on each node of the pool")
    labelled_by: Optional[GpuLabeller] = Field(
        default=None,
        description="tfk8s: tfk8s labels the pool's nodes tfk8s.io/gpu-product (default for pools of nodes); "
        "gfd: GPU Feature Discovery's nvidia.com/gpu.product is selected, tfk8s writes no GPU label "
        "(default for selector pools)",
    )


class NodePoolSpec(_Model):
    name: DnsLabel = Field(description="pool name, referenced by cluster.ps.pool / workers.pool")
    nodes: Optional[tuple[DnsSubdomain, ...]] = Field(
        default=None, description="existing nodes, by name; tfk8s labels them"
    )
    selector: Optional[dict[str, str]] = Field(
        default=None,
        description="labels that already select the pool's nodes (usable only with placement: spread)",
    )
    gpu: Optional[GpuSpec] = Field(default=None, description="GPUs on every node of the pool")

    @model_validator(mode="after")
    def _gpu_labels_of_a_selector_pool(self) -> "NodePoolSpec":
        if self.selector is not None and self.gpu is not None and self.gpu.labelled_by == "tfk8s":
            raise ValueError(
                "gpu.labelledBy: tfk8s labels only the nodes a pool names; a selector pool's GPU "
                "product is selected by GPU Feature Discovery's label: use labelledBy: gfd"
            )
        return self

    @property
    def gpu_labeller(self) -> Optional[GpuLabeller]:
        if self.gpu is None:
            return None
        return self.gpu.labelled_by or ("tfk8s" if self.nodes is not None else "gfd")

    @model_validator(mode="after")
    def _nodes_or_selector(self) -> "NodePoolSpec":
        if (self.nodes is None) == (self.selector is None):
            raise ValueError("give exactly one of 'nodes' (a list of node names) or 'selector'")
        if self.nodes is not None:
            if not self.nodes:
                raise ValueError("'nodes' must list at least one node")
            seen: set[str] = set()
            for node in self.nodes:
                if node in seen:
                    raise ValueError(f"node '{node}' is listed twice; list each node once")
                seen.add(node)
        if self.selector is not None and not self.selector:
            raise ValueError("'selector' must have at least one label")
        return self

    @property
    def pinnable(self) -> bool:
        return self.nodes is not None
