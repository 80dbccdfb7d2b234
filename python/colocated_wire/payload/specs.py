"""Specs: a TreeDef plus one table reference per leaf.

The same message appears on its own (SpecsPayload, what a worker returns as
output specs) and twice inside a ProgramPayload, always against the
payload's one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax import tree_util

from colocated.v1 import payload_pb2
from colocated_wire.entries import treedef
from colocated_wire.entries.array_spec import ARRAY_SPEC
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.limits import DecodeLimits
from colocated_wire.table.check_table import CheckContext
from colocated_wire.table.lift_table import LiftContext
from colocated_wire.table.lower_table import LowerContext, TableBuilder
from colocated_wire.table.references import References


def lower_specs(
    builder: TableBuilder,
    tree: tree_util.PyTreeDef,
    leaves: Sequence[jax.ShapeDtypeStruct],
) -> payload_pb2.Specs:
    """The Specs message; the leaves are added to the table."""
    leaves = list(leaves)
    if tree.num_leaves != len(leaves):
        raise EncodeError(f"the treedef has {tree.num_leaves} leaves but {len(leaves)} given")
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            raise EncodeError(f"leaf {i} is a {type(leaf).__name__}, not a ShapeDtypeStruct")
    msg = payload_pb2.Specs(treedef=treedef.lower(tree, LowerContext(builder)))
    msg.leaves.extend(builder.add(leaf) for leaf in leaves)
    return msg


def check_specs(
    msg: payload_pb2.Specs, path: str, refs: References, limits: DecodeLimits
) -> treedef.TreeShape:
    """Checks the tree, then that each leaf refers to an ArraySpec; returns the tree's facts."""
    if not msg.HasField("treedef"):
        raise DecodeError(f"{path}.treedef", "missing", "specs have no treedef")
    shape = treedef.check(msg.treedef, CheckContext(refs.size, f"{path}.treedef", refs, limits))
    if len(msg.leaves) != shape.num_leaves:
        raise DecodeError(
            f"{path}.leaves",
            "invalid-tree",
            f"{len(msg.leaves)} leaves for a tree of {shape.num_leaves}",
        )
    refs.check_all(msg.leaves, f"{path}.leaves", ARRAY_SPEC)
    return shape


def lift_specs(
    msg: payload_pb2.Specs, shape: treedef.TreeShape, objects: list[Any]
) -> tuple[tree_util.PyTreeDef, tuple[jax.ShapeDtypeStruct, ...]]:
    """(treedef, leaves) of checked specs over the lifted table."""
    tree = treedef.lift(msg.treedef, LiftContext(objects, shape))
    return tree, tuple(objects[i] for i in msg.leaves)
