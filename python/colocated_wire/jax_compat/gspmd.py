"""The tile dims of a MAXIMAL OpSharding, alike on every supported JAX.

Up to JAX 0.6, XLA writes a MAXIMAL sharding's proto with tile dims [1]; from
0.7 it writes none. The wire holds what 0.7 and later write, so the same
sharding is the same bytes on every version.
"""

from __future__ import annotations

from collections.abc import Callable

from jax._src.lib import xla_client as xc


def _maximal_dims_written() -> list[int]:
    op = xc.OpSharding()
    op.type = xc.OpSharding.Type.MAXIMAL
    op.tile_assignment_devices = [0]
    return [int(d) for d in xc.HloSharding.from_proto(op).to_proto().tile_assignment_dimensions]


def _as_written(dims: list[int]) -> list[int]:
    return dims


def _without_unit_dims(dims: list[int]) -> list[int]:
    return [] if dims == [1] else dims


maximal_tile_dims: Callable[[list[int]], list[int]]
"""A MAXIMAL sharding's tile dims as the wire holds them (none)."""
maximal_tile_dims = _as_written if not _maximal_dims_written() else _without_unit_dims
