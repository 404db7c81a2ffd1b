"""Where an experiment's pods may connect beyond each other and DNS (`tfk8s:cluster.egress`)."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator

from .model_base import StackModel

Port = Annotated[int, Field(strict=True, ge=1, le=65535)]


class EgressRule(StackModel):
    cidr: str = Field(description="addresses the pods may reach, as a CIDR ('10.20.0.0/16', '203.0.113.7/32')")
    ports: tuple[Port, ...] = Field(default=(), description="ports there (default: every port of the protocol)")
    protocol: Literal["TCP", "UDP", "SCTP"] = Field(default="TCP", description="protocol of those ports")

    @field_validator("cidr", mode="before")
    @classmethod
    def _not_a_number(cls, cidr: object) -> object:
        # A number here is no CIDR quoted or not (167772160 is 10.0.0.0 as one integer): say so,
        # rather than hint at quoting it as any other text field would.
        if isinstance(cidr, (bool, int, float)):
            raise ValueError("a number is not a CIDR such as 10.20.0.0/16")
        return cidr

    @field_validator("cidr")
    @classmethod
    def _a_network(cls, cidr: str) -> str:
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError as error:
            raise ValueError(f"'{cidr}' is not a CIDR such as 10.20.0.0/16 ({error})") from None
        if "/" not in cidr:
            raise ValueError(f"'{cidr}' has no prefix length: write {network.with_prefixlen}")
        return network.with_prefixlen  # 10.0.0.0/255.0.0.0 as the API server reads it: 10.0.0.0/8
