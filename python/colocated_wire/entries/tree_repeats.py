"""Shortening a tree (colocated.v1.1): REPEAT of an earlier subtree and LEAVES runs.

A training state repeats itself: forty layers of one structure, and `mu` and
`nu` mirroring the parameters. The canonical writer walks the tree in
preorder and writes a container subtree that equals an earlier one (its
kinds, arities, dict keys, node types, node data and leaf references) as one
REPEAT of the first occurrence's written index; then each maximal run of two
or more LEAF children of a written container becomes one LEAVES node.
Reading never expands a REPEAT before the limits have seen what it expands
to: sizes are summed per written node. src/entries/tree-repeats.ts is the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from colocated_wire._gen.colocated.v1 import tree_pb2

LEAF, NONE = tree_pb2.NODE_KIND_LEAF, tree_pb2.NODE_KIND_NONE
LEAVES, REPEAT = tree_pb2.NODE_KIND_LEAVES, tree_pb2.NODE_KIND_REPEAT

# A lowered node: (kind, arity, dict keys, node type (name, fields) or None, node data or None).
LoweredNode = tuple[int, int, tuple[Any, ...], Any, Any]


@dataclasses.dataclass(slots=True)
class Structure:
    """What the writer needs of a tree's shape, computed once per tree: where each subtree
    ends, its first leaf, which containers have a twin in structure, and leaf-sibling runs."""

    ends: list[int]
    leaf_at: list[int]  # leaves before each node; one more entry for the end
    twinned: list[bool]  # a container with children whose structure occurs again
    runs: list[int]  # at the first LEAF of a run of >= 2 sibling leaves, its length
    shape_ids: list[int]


def structure(nodes: Sequence[LoweredNode], str_keys: bool = False) -> Structure:
    """The Structure of lowered preorder nodes, by one pass from the end (children first);
    `str_keys`: every dict key is a str (no key needs its type to tell it apart)."""
    typed = _same if str_keys else _typed
    n = len(nodes)
    ends = [0] * n
    shape_ids = [-1] * n
    runs = [0] * n
    leaf_at = [0] * (n + 1)
    interned: dict[tuple, int] = {}
    counts: list[int] = []
    # Per finished subtree on the stack: its shape id and its end.
    ids_stack: list[int] = []
    ends_stack: list[int] = []
    leaves_after = 0  # leaves at or after node i
    for i in range(n - 1, -1, -1):
        kind, arity, keys, node_type, data = nodes[i]
        if kind == LEAF:
            leaves_after += 1
            ids_stack.append(-1)
            ends_stack.append(i + 1)
            ends[i] = i + 1
            leaf_at[i] = -leaves_after
            continue
        leaf_at[i] = -leaves_after
        if arity == 0:
            if kind == NONE:
                sid = -2
            else:
                own = (kind, typed(keys) if keys else keys, node_type, data)
                sid = interned.setdefault(own, len(interned))
            ends[i] = i + 1
        else:
            ids = tuple(reversed(ids_stack[-arity:]))
            child_ends = ends_stack[-arity:]
            child_ends.reverse()
            del ids_stack[-arity:], ends_stack[-arity:]
            own = (kind, typed(keys) if keys else keys, node_type, data, ids)
            sid = interned.setdefault(own, len(interned))
            ends[i] = child_ends[-1]
            if -1 in ids:
                _leaf_runs(ids, child_ends, i, runs)
        if sid >= 0:
            if sid == len(counts):
                counts.append(0)
            counts[sid] += 1
        shape_ids[i] = sid
        ids_stack.append(sid)
        ends_stack.append(ends[i])
    # leaf_at held minus the leaves at or after each node; the leaves before it are the rest.
    for i in range(n):
        leaf_at[i] += leaves_after
    leaf_at[n] = leaves_after
    twinned = [sid >= 0 and counts[sid] > 1 and nodes[i][1] > 0 for i, sid in enumerate(shape_ids)]
    return Structure(ends, leaf_at, twinned, runs, shape_ids)


def _leaf_runs(ids: tuple[int, ...], child_ends: list[int], i: int, runs: list[int]) -> None:
    """Marks the runs of >= 2 leaf children of container i at their first leaf."""
    arity = len(ids)
    j = 0
    while j < arity:
        if ids[j] != -1:
            j += 1
            continue
        k = j
        while k < arity and ids[k] == -1:
            k += 1
        if k - j >= 2:
            runs[i + 1 if j == 0 else child_ends[j - 1]] = k - j
        j = k


def _same(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    return keys


def _typed(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keys by value and type: 1, True and 1.0 are one Python key but not one wire key."""
    if all(type(k) is str for k in keys):
        return keys
    return tuple(k if type(k) is str else (type(k).__name__, k) for k in keys)


def compact(
    nodes: Sequence[LoweredNode], shape: Structure, refs: Sequence[int]
) -> tuple[list[LoweredNode], list[int]]:
    """The written nodes (REPEAT and LEAVES applied) and the written leaf references."""
    ends, leaf_at, twinned, runs, shape_ids = (
        shape.ends,
        shape.leaf_at,
        shape.twinned,
        shape.runs,
        shape.shape_ids,
    )
    written: list[LoweredNode] = []
    out_refs: list[int] = []
    first: dict[tuple, int] = {}
    n = len(nodes)
    i = 0
    while i < n:
        node = nodes[i]
        kind = node[0]
        if kind == LEAF:
            k = runs[i]
            if k:
                written.append((LEAVES, k, (), None, None))
                out_refs += refs[leaf_at[i] : leaf_at[i] + k]
                i += k
            else:
                written.append(node)
                out_refs.append(refs[leaf_at[i]])
                i += 1
            continue
        if twinned[i]:
            key = (shape_ids[i], tuple(refs[leaf_at[i] : leaf_at[ends[i]]]))
            source = first.get(key)
            if source is not None:
                written.append((REPEAT, source, (), None, None))
                i = ends[i]
                continue
            first[key] = len(written)
        written.append(node)
        i += 1
    return written, out_refs


# ---- reading ----------------------------------------------------------------


def expand_leaf_refs(plan: Sequence[tuple[int, int, int]], written: Sequence[int]) -> list[int]:
    """The leaf references of the expanded tree: `plan` is (0, first, count) for written leaves
    in a row, (1, first, count) for a copy of expanded leaves before (a REPEAT)."""
    out: list[int] = []
    for copies, first, count in plan:
        out += (out if copies else written)[first : first + count]
    return out
