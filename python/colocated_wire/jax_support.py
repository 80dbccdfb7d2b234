"""The JAX versions colocated_wire is tested with, checked when the package is imported.

JAX changes the names and behaviour colocated_wire relies on between minor
versions (jax_compat/ holds one module per difference), so a JAX outside this
range fails at import with what to install, not later with an AttributeError.
The oldest is 0.4.38, the last 0.4 release: it is the first whose colocated_python
has all four serialization functions the plugin replaces, and its differences
(no jax.sharding.AxisType, a Mesh.axis_types dict, a fixed-size uint8 output-spec
carrier) have modules in jax_compat/. Below 0.5 the bound is a release, not a minor.
python/pyproject.toml requires the same range of jax and jaxlib
(tests/test_package.py compares them), and the plugin checks jax.__version__
against it again at install, before it patches JAX.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable

_LOWEST = (0, 4, 38)  # the oldest release supported
_BELOW = (0, 11)  # the first major.minor not supported
SUPPORTED_JAX = f">={'.'.join(map(str, _LOWEST))},<{'.'.join(map(str, _BELOW))}"
JAX_DISTRIBUTIONS = ("jax", "jaxlib")
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")  # major.minor[.patch] at the start


def jax_in_range(version: str) -> bool:
    """Whether a jax or jaxlib version string is inside SUPPORTED_JAX (a suffix such as
    ".dev2026" or "rc1" after major.minor.patch does not count)."""
    match = _RELEASE.match(version)
    if match is None:
        return False
    release = tuple(int(part) for part in match.groups(default="0"))
    return _LOWEST <= release and release[:2] < _BELOW


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_jax(version_of: Callable[[str], str | None] = _installed) -> None:
    """Raises ImportError naming the range when jax or jaxlib is missing or outside it."""
    for name in JAX_DISTRIBUTIONS:
        version = version_of(name)
        if version is None:
            raise ImportError(
                f"colocated_wire needs {name} {SUPPORTED_JAX}, and {name} is not installed"
            )
        if not jax_in_range(version):
            raise ImportError(
                f"colocated_wire supports {name} {SUPPORTED_JAX}, and this is {name} {version}; "
                f'install one in the range: pip install "{name}{SUPPORTED_JAX}"'
            )
