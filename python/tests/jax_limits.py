"""What JAX itself cannot do on the installed version, for tests to skip with the reason.

Each limit is None where JAX can, else the skip reason naming the JAX version
and the limit. Most are found by trying the feature; PRNG keys in colocated
calls fail deep inside JAX (a C++ std::bad_cast) with nothing to look for, so
that one compares the version.
"""

from __future__ import annotations

import collections
import types

import jax
import numpy as np
import pytest
from jax.experimental import colocated_python
from jax.experimental.colocated_python import func, serialization
from jax.sharding import NamedSharding, PartitionSpec

from colocated_wire.jax_compat.axis_types import AXIS_TYPE_NAMED, axis_types_of, make_mesh

JAX = jax.__version__

# For tests that build meshes with axis types, on every supported JAX: the types by their
# JAX >= 0.5 names (AxisType.Explicit is 0.4.38's AxisTypes.User), a mesh of one type per
# axis, and a mesh's types per axis (jax_compat/axis_types.py).
AxisType = types.SimpleNamespace(**AXIS_TYPE_NAMED)
typed_mesh = make_mesh
mesh_axis_types = axis_types_of


def _limit(can: bool, what: str) -> str | None:
    return None if can else f"jax {JAX}: {what}"


def _mixed_axis_type_tuples() -> bool:
    auto, explicit = AXIS_TYPE_NAMED["Auto"], AXIS_TYPE_NAMED["Explicit"]
    mesh = make_mesh(np.array(jax.devices()[:2]).reshape(1, 2), ("a", "b"), (auto, explicit))
    try:
        NamedSharding(mesh, PartitionSpec(("a", "b")))
    except ValueError:
        return False
    return True


def _none_keys_in_ordered_dicts() -> bool:
    try:
        jax.tree_util.tree_flatten(collections.OrderedDict([(None, 0)]))
    except TypeError:
        return False
    return True


def _methods_outlive_their_object() -> bool:
    from jax.experimental.colocated_python import obj

    class Probe:
        pass

    probe = colocated_python.colocated_python_class(Probe)()
    uid = probe._colocated_python_uid
    del probe  # before JAX 0.9 its __del__ forgets the instance, which its methods update
    return uid in obj.SINGLETON_INSTANCE_REGISTRY._storage


AXIS_SETS = _limit(
    hasattr(PartitionSpec(), "unreduced"),
    "PartitionSpec has no unreduced or reduced axes (JAX 0.6 adds them)",
)
MIXED_AXIS_TYPE_TUPLES = _limit(
    _mixed_axis_type_tuples(),
    "a PartitionSpec tuple may not mix Auto and Explicit mesh axes (JAX 0.7 allows it)",
)
CPU_MEMORY_KINDS = _limit(
    {"device", "pinned_host", "unpinned_host"}
    <= {m.kind for m in jax.devices()[0].addressable_memories()},
    "CPU devices have only unpinned_host memory (JAX 0.7 adds device and pinned_host)",
)
NONE_KEYS_IN_ORDERED_DICTS = _limit(
    _none_keys_in_ordered_dicts(),
    "an OrderedDict or defaultdict with a None key does not flatten (DictKey(None); JAX 0.10)",
)
INTERNED_SPECS = _limit(
    PartitionSpec("x") is PartitionSpec("x"),
    "equal PartitionSpecs are not one object (JAX 0.10 interns them)",
)
ONE_AXIS_TUPLES = _limit(
    tuple(PartitionSpec(("x",))) == ("x",),
    "PartitionSpec keeps a one-axis tuple entry (JAX 0.5 makes it the axis)",
)
CPU_DEVICE_ERRORS = _limit(
    hasattr(serialization, "_lookup_cpu_device"),
    "colocated_python reads a device id it lacks as a KeyError (JAX 0.5 raises ValueError)",
)
CPU_ROUND_TRIP = _limit(
    hasattr(func, "_deserialize"),
    "colocated_python on CPU runs the function in process: it writes its programs (_serialize)"
    " and output specs (_serialize_specs, read back) but never reads a program back (JAX 0.8"
    " does), which these tests need",
)
COLOCATED_OBJECTS = _limit(
    hasattr(colocated_python, "colocated_python_class"),
    "colocated_python has no colocated objects (colocated_python_class; JAX 0.5 adds them)",
)
METHODS_OUTLIVE_THEIR_OBJECT = COLOCATED_OBJECTS or _limit(
    _methods_outlive_their_object(),
    "a colocated object's method kept after the object is dropped fails (KeyError: the"
    " object's instance is forgotten; JAX 0.9 keeps objects by weak reference)",
)
PRNG_KEYS = _limit(
    jax.__version_info__ >= (0, 10),
    "a PRNG key in a colocated_python call fails inside JAX (std::bad_cast; JAX 0.10 fixes it)",
)

# The conformance cases JAX cannot build here, by case name (test/vectors/<name>.bin).
_CASE_LIMITS = {
    "partition_specs": (AXIS_SETS, MIXED_AXIS_TYPE_TUPLES),
    "memory_kinds": (CPU_MEMORY_KINDS,),
    "newer_minor_version": (CPU_MEMORY_KINDS,),
    "value_shardings_1_2": (CPU_MEMORY_KINDS,),
    "trees_1_1": (NONE_KEYS_IN_ORDERED_DICTS,),
    "ordered_dicts_1_0": (NONE_KEYS_IN_ORDERED_DICTS,),
}


def case_limit(name: str) -> str | None:
    """Why JAX cannot build the conformance case `name` here; None when it can."""
    return next((r for r in _CASE_LIMITS.get(name, ()) if r is not None), None)


def skip_case(name: str) -> None:
    """Skips the test when JAX cannot build the conformance case `name` here."""
    reason = case_limit(name)
    if reason is not None:
        pytest.skip(reason)


def skip_if(limit: str | None) -> pytest.MarkDecorator:
    """A skip mark for a limit (None: runs)."""
    return pytest.mark.skipif(limit is not None, reason=limit or "")
