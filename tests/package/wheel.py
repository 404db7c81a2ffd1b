"""The wheel as a platform team gets it: `make dist` in a copy of the checkout, then a fresh virtual
environment that installs it the way examples/platform-team/requirements.txt says.

Everything is made under the test's temporary folder: the checkout is copied first (its files as
git lists them: a fresh clone's), so `make dist` leaves no build/, dist/ or egg-info in it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path("examples") / "platform-team"
# The program's environment, whose `build` makes the wheel (requirements-dev.txt).
PROGRAM_VENV = PROJECT_ROOT / ".venv"
# The toolchain's CLI and Kubernetes provider (`make toolchain`).
TOOLS_BIN = PROJECT_ROOT / ".tools" / "bin"


@dataclass(frozen=True)
class InstalledWheel:
    checkout: Path  # the copy `make dist` ran in
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def example(self) -> Path:
        return self.checkout / EXAMPLE

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """The venv's Python, isolated (-I): no PYTHONPATH, no user site, not the script's or the
        current folder, so only what the wheel installed can be imported."""
        return subprocess.run([str(self.python), "-I", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def copy_checkout(destination: Path) -> Path:
    """The checkout's tracked and new files (what git does not ignore), as a clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = PROJECT_ROOT / name
        if source.is_file():  # a file deleted but not yet committed is listed too
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)  # mtimes kept: make sees the program's environment as current
    return destination


def make_dist(checkout: Path) -> Path:
    """`make dist` in the copy, with the program's environment (never rebuilt from here: -o)."""
    stamp = PROGRAM_VENV / ".installed"
    result = subprocess.run(
        ["make", "--no-print-directory", "dist", f"VENV={PROGRAM_VENV}", "-o", str(stamp)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheels = sorted((checkout / "dist").glob("tfk8s-*.whl"))
    assert len(wheels) == 1, f"make dist wrote {wheels}"
    return wheels[0]


def install_example_requirements(checkout: Path, venv: Path) -> None:
    """A fresh venv with the example's requirements.txt (the wheel). Constrained to the checkout's
    pins, so that the SDK asks for the provider version the toolchain builds."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    result = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            # A throw-away environment that imports a small part of what it installs: compiling every
            # module up front (pulumi-kubernetes has thousands) took 15 of the 61 s this step took here.
            "--no-compile",
            "--requirement",
            "requirements.txt",
            "--constraint",
            str(checkout / "requirements.txt"),
        ],
        cwd=checkout / EXAMPLE,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def installed_wheel(workdir: Path) -> InstalledWheel:
    checkout = copy_checkout(workdir / "checkout")
    wheel = make_dist(checkout)
    venv = workdir / "venv"
    install_example_requirements(checkout, venv)
    return InstalledWheel(checkout, wheel, venv)


UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:9"}
users:
- name: nobody
  user: {token: none}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
"""


def run_json(installed: InstalledWheel, driver: str, *args: str) -> Any:
    """A driver of this folder, run by the wheel's venv in the example's folder; its last line, as JSON."""
    result = installed.run(str(Path(__file__).with_name(driver)), *args, cwd=installed.example)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return json.loads(result.stdout.splitlines()[-1])


def preview_example(installed: InstalledWheel, state: Path, kubeconfig: Path) -> dict[str, Any]:
    """The example previewed by the real engine (the toolchain's CLI and provider), from the wheel's venv."""
    missing = [name for name in ("pulumi", "pulumi-resource-kubernetes") if not (TOOLS_BIN / name).is_file()]
    assert not missing, f"the real engine needs {', '.join(missing)} in {TOOLS_BIN}: run `make toolchain`"
    preview: dict[str, Any] = run_json(
        installed, "preview_driver.py", str(installed.example), str(TOOLS_BIN), str(state), str(kubeconfig)
    )
    return preview


# What the example registers, by type name and resource name (the tokens' scheme is not the package
# tests' business): its experiment, the experiment's pool and cluster, a patch per node, the namespace.
EXAMPLE_RESOURCES = {
    ("TFExperiment", "ranking"),
    ("NodePool", "ranking-pool-servers"),
    ("TFCluster", "ranking"),
    ("NodePatch", "ranking-pool-servers-srv-00"),
    ("NodePatch", "ranking-pool-servers-srv-01"),
    ("Namespace", "ranking-namespace"),
}
