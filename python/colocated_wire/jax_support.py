"""The JAX versions colocated_wire is tested with, checked when the package is imported.

JAX changes the names and behaviour colocated_wire relies on between minor
versions (jax_compat/ holds one module per difference), so a JAX outside this
range fails at import with what to install, not later with an AttributeError.
0.4 is not supported: it has no jax.sharding.AxisType, its Mesh.axis_types is
a dict of another shape, and its colocated_python output-spec carrier differs.
python/pyproject.toml requires the same range of jax and jaxlib
(tests/test_package.py compares them), and the plugin checks jax.__version__
against it again at install, before it patches JAX.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable

_LOWEST = (0, 5)  # the oldest major.minor supported
_BELOW = (0, 11)  # the first major.minor not supported
SUPPORTED_JAX = f">={_LOWEST[0]}.{_LOWEST[1]},<{_BELOW[0]}.{_BELOW[1]}"
JAX_DISTRIBUTIONS = ("jax", "jaxlib")


def jax_in_range(version: str) -> bool:
    """Whether a jax or jaxlib version string is inside SUPPORTED_JAX."""
    try:
        major_minor = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return _LOWEST <= major_minor < _BELOW


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
