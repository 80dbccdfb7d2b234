"""A mesh's axis types, read and made alike on every supported JAX.

From JAX 0.5, `jax.sharding.AxisType` is Auto / Explicit / Manual and
`Mesh.axis_types` holds one per axis, as the wire does. JAX 0.4.38 has no
`jax.sharding.AxisType`: its `jax._src.mesh.AxisTypes` is Auto / User /
Collective (0.5 renamed User to Explicit and Collective to Manual, the same
roles), and its `Mesh.axis_types` is a dict from a type to the axis names of
that type (one name, or a tuple of them), defaulting to {Auto: axis_names}.
Such a mesh is read axis by axis, and made from the wire in one form: None
(JAX's own default) when every axis is Auto, else each type's axes as a tuple
in mesh order, types in the order their first axis comes.

A 0.4.38 mesh equals only a mesh of the same dict items, in the same order and
the same form (a name or a tuple). A dict that this one form does not give back
(a bare name instead of a tuple, names or types in another order, a name that
is not an axis, an axis with no type or two) cannot be written as per-axis types
and read back as an equal mesh, so lowering raises an EncodeError naming the
form that can, rather than writing another mesh.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from colocated_wire.errors import EncodeError

# Whether Mesh.axis_types is a tuple of jax.sharding.AxisType, one per axis (JAX >= 0.5).
PER_AXIS = hasattr(jax.sharding, "AxisType")

if PER_AXIS:
    from jax.sharding import AxisType

    AXIS_TYPE_NAMED: Mapping[str, Any] = {t.name: t for t in AxisType}
else:
    from jax._src.mesh import AxisTypes

    AXIS_TYPE_NAMED = {
        "Auto": AxisTypes.Auto,
        "Explicit": AxisTypes.User,
        "Manual": AxisTypes.Collective,
    }
"""JAX's axis type by the name 0.5 and later give it (the wire's: Auto, Explicit, Manual)."""


def _make_per_axis(devices: np.ndarray, names: tuple[str, ...], types: tuple[Any, ...]) -> Mesh:
    return Mesh(devices, names, axis_types=types)


def _grouped(names: Sequence[str], types: Sequence[Any]) -> dict[Any, tuple[str, ...]] | None:
    """The one dict form a 0.4.38 mesh is made in (None: JAX's default, every axis Auto)."""
    if all(t is AXIS_TYPE_NAMED["Auto"] for t in types):
        return None
    grouped: dict[Any, tuple[str, ...]] = {}
    for name, t in zip(names, types, strict=True):
        grouped[t] = (*grouped.get(t, ()), name)
    return grouped


def _make_from_dict(devices: np.ndarray, names: tuple[str, ...], types: tuple[Any, ...]) -> Mesh:
    return Mesh(devices, names, axis_types=_grouped(names, types))


def _per_axis_of_dict(mesh: Mesh) -> tuple[Any, ...]:
    names = tuple(mesh.axis_names)
    by_name: dict[str, Any] = {}
    for t, listed in mesh.axis_types.items():
        for name in (listed,) if isinstance(listed, str) else tuple(listed):
            if name not in names:
                raise _unrepresentable(mesh, f"{name!r} is not an axis of the mesh {names}")
            if name in by_name:
                raise _unrepresentable(mesh, f"axis {name!r} is given more than one type")
            by_name[name] = t
    if len(by_name) != len(names):
        missing = [n for n in names if n not in by_name]
        raise _unrepresentable(mesh, f"axes {missing} have no type")
    types = tuple(by_name[n] for n in names)
    made = _grouped(names, types) or {AXIS_TYPE_NAMED["Auto"]: names}
    if tuple(made.items()) != tuple(mesh.axis_types.items()):
        raise _unrepresentable(mesh, f"only {made} is read back as this mesh")
    return types


def _unrepresentable(mesh: Mesh, why: str) -> EncodeError:
    return EncodeError(
        f"mesh axis types {mesh.axis_types!r} cannot be written as one type per axis: {why}"
    )


axis_types_of: Callable[[Mesh], tuple[Any, ...]]
"""A mesh's axis types, one per axis in axis order (EncodeError if it has no such types)."""
make_mesh: Callable[[np.ndarray, tuple[str, ...], tuple[Any, ...]], Mesh]
"""The Mesh of devices (shaped as the axes), axis names and one axis type per axis."""
if PER_AXIS:
    axis_types_of = operator.attrgetter("axis_types")
    make_mesh = _make_per_axis
else:
    axis_types_of = _per_axis_of_dict
    make_mesh = _make_from_dict
