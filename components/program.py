"""Kept for programs written against it: the Pulumi entry point is components/resources/entry_point.py."""

from .resources.entry_point import build, engine_config, main

__all__ = ["build", "engine_config", "main"]
