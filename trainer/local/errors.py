"""What goes wrong when the launcher starts a local cluster."""

from __future__ import annotations


class LaunchError(RuntimeError):
    pass


class PortClash(LaunchError):
    """A task could not listen on the port picked for it: another process took it first."""
