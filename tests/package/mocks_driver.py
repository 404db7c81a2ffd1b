"""Runs a Pulumi program under Pulumi's unit-test mocks, in the virtual environment the wheel was
installed into: `venv/bin/python -I mocks_driver.py PROGRAM`. Prints one JSON line: each
resource the program registered: its type, name and provider reference, and a ConfigMap's data keys.
"""

from __future__ import annotations

import json
import runpy
import sys
from typing import Any, Optional

import pulumi


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registered: list[dict[str, Any]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[Optional[str], dict]:
        data_keys = sorted(args.inputs.get("data") or {}) if args.typ == "kubernetes:core/v1:ConfigMap" else None
        self.registered.append({"type": args.typ, "name": args.name, "provider": args.provider, "dataKeys": data_keys})
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, Optional[list[tuple[str, str]]]]:
        return {}, None


def main(program: str) -> None:
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="example", stack="dev", preview=True)

    @pulumi.runtime.test
    def run() -> None:
        runpy.run_path(program, run_name="__main__")

    run()
    print(json.dumps(mocks.registered))


if __name__ == "__main__":
    main(sys.argv[1])
