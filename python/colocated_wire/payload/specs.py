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

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.entries import treedef
from colocated_wire.entries.array_spec import ARRAY_SPEC, add_leaves
from colocated_wire.entries.leaf_copies import (
    LEAF_COPIES_SINCE,
    expand_leaf_copies,
    find_leaf_copies,
)
from colocated_wire.errors import DecodeError, EncodeError
from colocated_wire.table.check_table import CheckContext
from colocated_wire.table.lift_table import LiftContext
from colocated_wire.table.lower_table import LowerContext
from colocated_wire.table.references import References

_LEAF_TYPES = {jax.ShapeDtypeStruct}


def lower(
    tree: tree_util.PyTreeDef,
    leaves: Sequence[jax.ShapeDtypeStruct],
    ctx: LowerContext,
    path: str = "specs",
) -> payload_pb2.Specs:
    """The Specs message: the leaves go into the shared table, the structure into columns.
    A leaf that cannot be written is an EncodeError at `path`.leaves[i]."""
    leaves = list(leaves)
    if tree.num_leaves != len(leaves):
        raise EncodeError(f"the treedef has {tree.num_leaves} leaves but {len(leaves)} given")
    if set(map(type, leaves)) - _LEAF_TYPES:  # one pass in C; the loop names the first
        for i, leaf in enumerate(leaves):
            if not isinstance(leaf, jax.ShapeDtypeStruct):
                raise EncodeError(f"leaf {i} is a {type(leaf).__name__}, not a ShapeDtypeStruct")
    target = ctx.builder.target_minor_version
    lowered = treedef.lower(tree, target, f"{path}.treedef")
    indices: list[int] = []
    try:
        add_leaves(leaves, ctx, indices)
    except EncodeError as e:
        raise e.under(f"{path}.leaves[{len(indices)}]") from e
    # A 1.1 tree leaves out the leaves of a repeated subtree.
    tree_msg, written = treedef.write(lowered, indices)
    if target < LEAF_COPIES_SINCE:
        return payload_pb2.Specs(treedef=tree_msg, leaves=written)
    # From 1.3 on, a run of leaves that repeats earlier ones is written as a copy.
    leaves_written, copies = find_leaf_copies(written)
    return payload_pb2.Specs(treedef=tree_msg, leaves=leaves_written, leaf_copies=copies)


def check(msg: payload_pb2.Specs | None, ctx: CheckContext) -> treedef.TreeShape:
    """Checks specs (None: absent): a treedef, then its leaves, each written one an ArraySpec
    reference (a copy makes leaves of those); returns the treedef's facts."""
    path, refs = ctx.path, ctx.refs
    if msg is None:
        raise DecodeError(path, "missing", "specs are required")
    shape = treedef.check_tree_of(msg, ctx, "specs have", msg.leaf_copies)
    _check_leaves(msg.leaves, f"{path}.leaves", refs)
    return shape


def _check_leaves(leaves: Sequence[int], path: str, refs: References) -> None:
    """Each leaf refers to an array spec. Leaves share few entries, so each distinct one is
    checked once; if one fails, the leaves are checked in order to name the first."""
    size, kinds = refs.table_size, refs.kinds
    if not all(i < size and kinds[i] in ARRAY_SPEC for i in set(leaves)):
        refs.check_all(leaves, path, ARRAY_SPEC)


def lift(
    msg: payload_pb2.Specs, ctx: LiftContext
) -> tuple[tree_util.PyTreeDef, tuple[jax.ShapeDtypeStruct, ...]]:
    """(treedef, leaves) of checked specs; the leaves are the table's objects, shared."""
    objects: list[Any] = ctx.objects
    refs = leaf_refs(msg, ctx.facts)
    return treedef.lift(msg.treedef, ctx), tuple(map(objects.__getitem__, refs))


def leaf_refs(msg: payload_pb2.Specs, shape: treedef.TreeShape) -> Sequence[int]:
    """Every leaf's ArraySpec reference of checked specs: leaf copies (1.3) made, then the
    tree's REPEATs."""
    return treedef.leaf_refs(shape, expand_leaf_copies(msg.leaves, msg.leaf_copies))
