"""Remote storage a stack names that its own egress (`tfk8s:cluster.egress`) never lets the tasks
reach: checkpoints, data or TensorBoard's event files on gs://, s3://, hdfs://... behind `egress: []`
or a list with no rule for them. A warning, not an error: tfk8s cannot see every route (a proxy, a
mount, a sidecar), but the stack as written trains into a wall.

`stack_warnings` is what plan and preview print; each line names the stack and both keys.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterator, Optional

from .egress import EgressRule
from .models import CONFIG_NAMESPACE, StackConfig
from .program import ProgramSpec
from .remote_storage import RemoteUrl, remote_url
from .tensorboard_rules import tensorboard_log_dir

ns = CONFIG_NAMESPACE

# Storage a program may name in its command, args or env (TensorFlow's, Hadoop's and the clouds' file systems).
STORAGE_SCHEMES = ("gs", "s3", "s3a", "hdfs", "viewfs", "abfs", "abfss", "az", "oss")
_STORAGE_URL = re.compile(rf"\b({'|'.join(STORAGE_SCHEMES)})://[^\s'\",;]*")


@dataclass(frozen=True)
class StorageUse:
    key: str  # the stack key that names it, below tfk8s:
    url: str
    parts: RemoteUrl
    what: str  # what the tasks do there, for the warning


def stack_warnings(config: StackConfig) -> list[str]:
    """What plan and preview print about a stack that is valid but cannot do what it says."""
    return unreachable_storage_warnings(config)


def unreachable_storage_warnings(config: StackConfig) -> list[str]:
    egress = config.cluster.egress
    if egress is None:
        return []  # open: every destination
    warnings = []
    for use in storage_uses(config):
        if _reaches(egress, use.parts):
            continue
        port = use.parts.port
        if not egress:
            closed = "is [] (the tasks reach only each other and DNS)"
        elif port is None:
            closed = "lists no TCP rule"
        else:
            closed = f"lists no rule for TCP port {port}" + (
                f" to {use.parts.host}" if _ip(use.parts.host) is not None else ""
            )
        warnings.append(
            f"stack '{config.stack}': {ns}:{use.key} names {use.url!r}, remote storage, and {ns}:cluster.egress "
            f"{closed}, so {use.what}; list its addresses in cluster.egress (docs/network.md), or leave egress out"
        )
    return warnings


def storage_uses(config: StackConfig) -> Iterator[StorageUse]:
    """Every remote URL the stack's tasks must reach."""
    if config.program is None:
        trainer = config.trainer
        uses = (
            ("trainer.checkpointDir", trainer.checkpoint_dir, "the chief can never save a checkpoint there"),
            ("trainer.data", trainer.data, "the workers can never read their data"),
        )
        for key, text, what in uses:
            parts = remote_url(text)
            if parts is not None:
                yield StorageUse(key, text, parts, what)
    log_dir = tensorboard_log_dir(config)
    parts = remote_url(log_dir) if log_dir is not None else None
    if log_dir is not None and parts is not None:
        assert config.tensorboard is not None
        key = "tensorboard.logDir" if config.tensorboard.log_dir is not None else "tensorboard.logDir (left out)"
        yield StorageUse(key, log_dir, parts, "the tasks can never write TensorBoard's event files there")
    if config.program is not None:
        yield from _program_uses(config.program)


def _program_uses(program: ProgramSpec) -> Iterator[StorageUse]:
    words: list[tuple[str, str]] = []
    for role, given in [("", None), *sorted(program.roles.items())]:
        prefix = f"program.roles.{role}" if role else "program"
        command, args = (given.command, given.args) if given is not None else (program.command, program.args)
        words += [(f"{prefix}.command[{index}]", word) for index, word in enumerate(command or ())]
        words += [(f"{prefix}.args[{index}]", word) for index, word in enumerate(args or ())]
    words += [(f"program.env.{name}", value) for name, value in program.env.items() if isinstance(value, str)]
    for key, word in words:
        for match in _STORAGE_URL.finditer(word):
            parts = remote_url(match.group())
            if parts is not None:
                yield StorageUse(key, match.group(), parts, "the program's tasks can never reach it")


def _ip(host: str) -> Optional[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _reaches(egress: tuple[EgressRule, ...], url: RemoteUrl) -> bool:
    """Whether some rule could carry a connection to `url`: TCP, on its port (any where tfk8s does not
    know the port), to its address where the URL gives one (a bucket's or a host's name is not
    resolved: any address may be it)."""
    port, address = url.port, _ip(url.host)
    for rule in egress:
        if rule.protocol != "TCP":
            continue
        if rule.ports and port is not None and port not in rule.ports:
            continue
        if address is not None and address not in ipaddress.ip_network(rule.cidr):
            continue
        return True
    return False
