"""The package a platform team installs (issue 42, item 1): `make dist` writes a wheel whose only
top-level name is `tfk8s`; a fresh virtual environment installs it the way
examples/platform-team/requirements.txt says and imports the components from `tfk8s`, while
`components` and `trainer` stay names of the checkout; the example program registers the whole
experiment from the installed wheel, the trainer's source included. The real engine's preview of
the example needs the toolchain, which `make test-program` does not build: tests/cluster runs it
(tests/package/wheel.py, preview_example)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from components.plan.trainer_bundle import load_trainer_bundle
from tests.package.wheel import EXAMPLE_RESOURCES, PROJECT_ROOT, InstalledWheel, installed_wheel, run_json

pytestmark = pytest.mark.slow

PUBLIC_NAMES = ("TFExperiment", "TFExperimentArgs", "NodePool", "TFCluster")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> InstalledWheel:
    return installed_wheel(tmp_path_factory.mktemp("package"))


def wheel_files(installed: InstalledWheel) -> list[str]:
    with zipfile.ZipFile(installed.wheel) as wheel:
        return wheel.namelist()


def test_make_dist_writes_one_wheel_whose_only_top_level_name_is_tfk8s(installed):
    files = wheel_files(installed)
    assert installed.wheel.name.startswith("tfk8s-") and installed.wheel.name.endswith("-py3-none-any.whl")
    assert {name.split("/")[0] for name in files} == {"tfk8s", installed.wheel.name.split("-py3")[0] + ".dist-info"}
    top_level = next(name for name in files if name.endswith(".dist-info/top_level.txt"))
    with zipfile.ZipFile(installed.wheel) as wheel:
        assert wheel.read(top_level).decode().split() == ["tfk8s"]


def test_the_wheel_carries_every_module_of_components_and_of_the_trainers_package(installed):
    """A new sub-package of components/ left out of pyproject.toml's list fails here, not in a user's
    program; the trainer's flat package is shipped whole, since pods run it from its source."""
    expected = {
        f"tfk8s/{path.relative_to(PROJECT_ROOT).as_posix()}"
        for path in [*(PROJECT_ROOT / "components").rglob("*.py"), *(PROJECT_ROOT / "trainer").glob("*.py")]
        if "__pycache__" not in path.parts
    }
    assert expected - set(wheel_files(installed)) == set()


def test_pip_install_of_the_checkout_installs_what_the_wheel_holds(installed, tmp_path):
    """`pip install <checkout>` builds the same wheel on the way."""
    target = tmp_path / "site-packages"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(target),
            str(installed.checkout),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    package = {path.relative_to(target).as_posix() for path in (target / "tfk8s").rglob("*.py")}
    assert package == {name for name in wheel_files(installed) if name.endswith(".py")}


def test_a_fresh_venv_imports_the_components_from_tfk8s_and_neither_components_nor_trainer(installed, tmp_path):
    imported = installed.run("-c", f"from tfk8s import {', '.join(PUBLIC_NAMES)}; print('ok')", cwd=tmp_path)
    assert imported.returncode == 0 and imported.stdout.split() == ["ok"], imported.stderr[-3000:]
    for checkout_only in ("components", "trainer"):
        refused = installed.run("-c", f"import {checkout_only}", cwd=tmp_path)
        assert refused.returncode == 1
        assert f"ModuleNotFoundError: No module named '{checkout_only}'" in refused.stderr


def test_the_example_registers_its_experiment_from_the_wheel_with_the_trainers_source(installed):
    """The example's __main__.py under Pulumi's mocks, in the wheel's venv: the component and its
    children, every Kubernetes object on the team's provider, and the trainer's ConfigMap holding
    exactly the modules a pod runs, read from the installed package as from the checkout."""
    registered = run_json(installed, "mocks_driver.py", str(installed.example / "__main__.py"))
    # By type name, not token: the tokens' scheme is not this test's business.
    names = {(resource["type"].rsplit(":", 1)[-1], resource["name"]) for resource in registered}
    assert {("kubernetes", "team-cluster"), *EXAMPLE_RESOURCES} <= names
    objects = [r for r in registered if r["type"].startswith("kubernetes:") and "providers" not in r["type"]]
    assert objects and all("::team-cluster::" in (r["provider"] or "") for r in objects), objects
    trainer_config_maps = [r["dataKeys"] for r in registered if r["name"] == "ranking-trainer"]
    assert trainer_config_maps == [sorted(load_trainer_bundle(PROJECT_ROOT).files)]
