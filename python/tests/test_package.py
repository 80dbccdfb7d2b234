"""What pip installs: one version with npm, the tested JAX range, and its check at import.

scripts/check-python-package.sh builds and installs the wheel itself; these
check the sources it is built from.
"""

import json
import tomllib
from pathlib import Path

import pytest

import colocated_wire
from colocated_wire import plugin
from colocated_wire.jax_support import SUPPORTED_JAX, check_jax, jax_in_range

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())


def test_the_version_is_package_jsons():
    package = json.loads((ROOT / "package.json").read_text())
    assert colocated_wire.__version__ == package["version"]


def test_pyproject_reads_the_version_from_the_package():
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "colocated_wire._version.__version__"


@pytest.mark.parametrize("name", ["jax", "jaxlib"])
def test_pyproject_requires_the_tested_jax_range(name):
    assert f"{name}{SUPPORTED_JAX}" in PYPROJECT["project"]["dependencies"]


def test_the_worker_extra_brings_grpcio_its_standard_services_and_metrics():
    worker = PYPROJECT["project"]["optional-dependencies"]["worker"]
    names = [r.split(">")[0] for r in worker]
    assert names == ["grpcio", "grpcio-health-checking", "grpcio-reflection", "prometheus_client"]


def test_the_package_is_typed():
    assert (ROOT / "python" / "colocated_wire" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["colocated_wire"]


def test_the_plugin_checks_the_same_range():
    assert plugin.SUPPORTED_JAX is SUPPORTED_JAX == colocated_wire.SUPPORTED_JAX == ">=0.4.38,<0.11"


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("0.4.38", True),
        ("0.4.38.dev20241201", True),
        ("0.5.0", True),
        ("0.5.0rc1", True),
        ("0.9.9", True),
        ("0.10.0", True),
        ("0.10.2", True),
        ("0.10.3.dev20260101", True),
        ("0.4.37", False),
        ("0.4", False),
        ("0.3.99", False),
        ("0.11.0", False),
        ("1.10.0", False),
        ("dev", False),
    ],
)
def test_a_version_is_inside_the_range_by_release(version, inside):
    assert jax_in_range(version) is inside


def test_the_installed_jax_passes():
    check_jax()


@pytest.mark.parametrize("name", ["jax", "jaxlib"])
def test_a_jax_outside_the_range_fails_by_name(name):
    versions = {"jax": "0.10.2", "jaxlib": "0.10.2", name: "0.11.1"}
    with pytest.raises(ImportError) as e:
        check_jax(versions.get)
    assert str(e.value) == (
        f"colocated_wire supports {name} >=0.4.38,<0.11, and this is {name} 0.11.1; "
        f'install one in the range: pip install "{name}>=0.4.38,<0.11"'
    )


def test_a_missing_jaxlib_fails_by_name():
    with pytest.raises(ImportError) as e:
        check_jax({"jax": "0.10.2"}.get)
    assert str(e.value) == "colocated_wire needs jaxlib >=0.4.38,<0.11, and jaxlib is not installed"
