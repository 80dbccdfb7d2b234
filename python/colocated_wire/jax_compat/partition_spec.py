"""A PartitionSpec's entries and axis sets, and making one, on every supported JAX.

JAX 0.10 gives PartitionSpec a `partitions` attribute; before it, iterating the
spec yields the same entries. `unreduced` and `reduced` (axes a value is a
partial sum over, or reduced on) first appear in JAX 0.6; on 0.5 a spec has
neither, so it is read with empty sets, and a message naming such axes cannot
be lifted (LiftError naming the version) rather than silently dropped.

From JAX 0.5, PartitionSpec(("x",)) holds the entry "x"; JAX 0.4.38 keeps the
one-axis tuple, though a NamedSharding of it equals one of "x" there too. So
that the same sharding is the same bytes on every version, such an entry is
read as its axis on 0.4.38 as well (and lifted as P("x"), an equal sharding).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import jax
from jax.sharding import PartitionSpec

from colocated_wire.errors import LiftError

# Whether a PartitionSpec carries unreduced and reduced axis sets (JAX >= 0.6).
HAS_AXIS_SETS = hasattr(PartitionSpec(), "unreduced")

partitions: Callable[[PartitionSpec], tuple[Any, ...]]
"""The spec's entries, in order (None, an axis name, a tuple of them, or UNCONSTRAINED)."""
if hasattr(PartitionSpec, "partitions"):
    partitions = operator.attrgetter("partitions")
else:
    partitions = tuple


# Whether PartitionSpec turns a one-axis tuple entry into that axis (JAX >= 0.5).
ONE_AXIS_TUPLES_CANONICAL = tuple(PartitionSpec(("x",))) == ("x",)


def _one_axis_tuples_as_axes(spec: PartitionSpec) -> tuple[Any, ...]:
    return tuple(p[0] if type(p) is tuple and len(p) == 1 else p for p in spec)


def _entries_with_axis_sets(spec: PartitionSpec) -> tuple[Any, Any, Any]:
    return (tuple(spec), spec.unreduced, spec.reduced)


def _entries_without_axis_sets(spec: PartitionSpec) -> tuple[Any, Any, Any]:
    return (tuple(spec), frozenset(), frozenset())


def _canonical_entries_without_axis_sets(spec: PartitionSpec) -> tuple[Any, Any, Any]:
    return (_one_axis_tuples_as_axes(spec), frozenset(), frozenset())


spec_fields: Callable[[PartitionSpec], tuple[Any, Any, Any]]
"""(entries, unreduced, reduced) of a spec, as the spec holds them (a one-axis tuple as its
axis, as JAX >= 0.5 holds it)."""
if not ONE_AXIS_TUPLES_CANONICAL:  # JAX 0.4.38, which has no axis sets either
    spec_fields = _canonical_entries_without_axis_sets
elif not HAS_AXIS_SETS:
    spec_fields = _entries_without_axis_sets
elif partitions is tuple:
    spec_fields = _entries_with_axis_sets
else:
    spec_fields = operator.attrgetter("partitions", "unreduced", "reduced")


def _make_without_axis_sets(
    parts: tuple[Any, ...], unreduced: frozenset, reduced: frozenset
) -> PartitionSpec:
    if unreduced or reduced:
        raise LiftError(
            f"jax {jax.__version__} has no unreduced or reduced PartitionSpec axes"
            f" (they need jax >= 0.6): unreduced={sorted(unreduced)} reduced={sorted(reduced)}"
        )
    return PartitionSpec(*parts)


def _make_with_axis_sets(
    parts: tuple[Any, ...], unreduced: frozenset, reduced: frozenset
) -> PartitionSpec:
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


make_spec: Callable[[tuple[Any, ...], frozenset, frozenset], PartitionSpec]
"""The PartitionSpec of (entries, unreduced, reduced)."""
make_spec = _make_with_axis_sets if HAS_AXIS_SETS else _make_without_axis_sets
