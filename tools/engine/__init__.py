"""The real Pulumi engine on the local cluster: `make preview|up|destroy STACK=s`.

The CLI and the Kubernetes provider are the ones `make toolchain` builds into
.tools/bin. No Python language host is built here, so the program runs inline
through the Automation API (the `pulumi` package serves the language protocol
itself); it is the same program as the project's __main__.py. The state is a
local file backend under .cluster/pulumi/, and the policy pack runs on preview
and up as the analyzer plugin policy/analyzer.
"""

from .workspace import COMMANDS, EngineDirs, EngineError, engine_stack, run_engine

__all__ = ["COMMANDS", "EngineDirs", "EngineError", "engine_stack", "run_engine"]
