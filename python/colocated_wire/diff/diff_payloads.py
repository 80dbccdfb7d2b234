"""Why two payloads differ: a worker caches a program by the SHA-256 of its bytes, so one
changed byte specializes again. Both are checked, their trees walked side by side once, and each
pair of facing leaves compared by its entries' values once; what differs is gathered by cause.
TypeScript: src/diff/diff-payloads.ts (`colocated-wire diff`), the same result."""

from __future__ import annotations

from typing import Any

import numpy as np

from colocated_wire.diff.compare_entries import EntryComparison
from colocated_wire.diff.groups import Groups
from colocated_wire.diff.payload_causes import (
    devices_causes,
    function_cause,
    header_cause,
    part_cause,
    writer_cause,
)
from colocated_wire.diff.payload_diff import PayloadDiff
from colocated_wire.diff.read_side import DiffSide, read_side
from colocated_wire.diff.tree_walk import walk_trees
from colocated_wire.errors import DecodeError


class DiffInputError(ValueError):
    """A payload the diff could not read, or not of the other's kind: which one ("a" or "b"),
    and why (its DecodeError, as __cause__ and `error`)."""

    def __init__(self, which: str, error: DecodeError):
        super().__init__(f"{which}: {error}")
        self.input = which
        self.error = error


def diff(a: Any, b: Any) -> PayloadDiff:
    """Compares two payloads of one kind, each given as its bytes or as a live
    `(treedef, leaves)` pair of specs (written as serialize_specs writes it); the result is what
    `colocated-wire diff --json` prints (`to_json()`), `str()` its lines. A payload that does
    not decode, or is of the other's kind, is a DiffInputError."""
    data_a, data_b = _payload(a), _payload(b)
    same = data_a == data_b
    side_a = _read(data_a, "a")
    side_b = side_a if same else _read(data_b, "b")
    if side_a.kind != side_b.kind:
        detail = f"this is a {side_b.kind} payload, not a {side_a.kind} payload"
        error = DecodeError("header.kind", "wrong-payload-kind", detail)
        raise DiffInputError("b", error) from error
    leaves = (_leaf_count(side_a), _leaf_count(side_b))
    sizes = (len(data_a), len(data_b))
    if same:
        return PayloadDiff(side_a.kind, True, True, sizes, leaves, 0, ())
    groups, differing = _compare_sides(side_a, side_b)
    return PayloadDiff(side_a.kind, False, not groups, sizes, leaves, differing, tuple(groups))


def _compare_sides(a: DiffSide, b: DiffSide) -> tuple[list, int]:
    """The differences of two sides of one kind, in the order of the payload's fields."""
    groups = Groups()
    entries = EntryComparison(a, b)
    differing = 0
    header = header_cause(a, b)
    if header is not None:
        groups.add(header, None, 0)
    writer = writer_cause(a, b)
    if writer is not None:
        groups.add(writer, None, 0)
    if a.kind == "program":
        fn = function_cause(a, b, entries)
        if fn is not None:
            groups.add(fn, None, 0)
        for cause in devices_causes(a, b, entries):
            groups.add(cause, None, 0)
    names = list(dict.fromkeys(p.name for p in [*a.parts, *b.parts]))
    for name in names:
        pa = next((p for p in a.parts if p.name == name), None)
        pb = next((p for p in b.parts if p.name == name), None)
        if pa is None or pb is None:
            leaves = len((pa or pb).leaf_refs)
            groups.add(part_cause(name, pa is not None, leaves), None, leaves)
            differing += leaves
            continue
        compare = entries.value_leaves if a.kind == "value" else entries.array_specs
        sink = _Sink(groups, compare, pa.leaf_refs, pb.leaf_refs)
        walk_trees(name, pa.root, pb.root, len(pa.leaf_refs), sink)
        differing += sink.differing
    return groups.finish(), differing


class _Sink:
    """What the walk finds goes into the groups; facing leaves are compared by their entries,
    a run of them (a list of arrays) as columns: each distinct pair of entries once, then the
    leaves of each cause picked out in numpy."""

    __slots__ = ("groups", "compare", "refs_a", "refs_b", "differing")

    def __init__(self, groups: Groups, compare: Any, refs_a: np.ndarray, refs_b: np.ndarray):
        self.groups, self.compare = groups, compare
        self.refs_a, self.refs_b = refs_a, refs_b
        self.differing = 0

    def node(self, cause: Any, place: Any, leaves: int) -> None:
        self.groups.add(cause, place, leaves)
        self.differing += leaves

    def leaf(self, ia: int, ib: int, parent: Any, container: Any, index: int) -> None:
        causes = self.compare(int(self.refs_a[ia]), int(self.refs_b[ib]))
        if causes:
            self.differing += 1
            for cause in causes:
                self.groups.add_leaf(cause, parent, container, index)

    def leaves(self, ia: int, ib: int, count: int, parent: Any, container: Any) -> None:
        if count == 0:
            return
        pair_of, pairs = _pairs(self.refs_a[ia : ia + count], self.refs_b[ib : ib + count])
        # The groups are made in the order the leaves would have made them, one at a time.
        by_cause: dict[str, tuple[Any, np.ndarray]] = {}
        differs = np.zeros(len(pairs), bool)
        for p, (x, y) in enumerate(pairs):
            for cause in self.compare(x, y):
                differs[p] = True
                if cause.key not in by_cause:
                    by_cause[cause.key] = (cause, np.zeros(len(pairs), bool))
                by_cause[cause.key][1][p] = True
        if not by_cause:
            return
        self.differing += count if differs.all() else int(np.count_nonzero(differs[pair_of]))
        for cause, has in by_cause.values():
            at = range(count) if has.all() else np.flatnonzero(has[pair_of]).tolist()
            self.groups.add_leaves(cause, parent, container, at)


def _pairs(ra: np.ndarray, rb: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The distinct pairs of entries that leaves face (leaf k: `ra[k]` against `rb[k]`), in the
    order of their first leaves, and each leaf's pair by its number among them."""
    n = len(ra)
    # A pair as one number; a value's leaves that are no entries are negative, so shift.
    low = min(int(ra.min()), int(rb.min()), 0)
    width = int(rb.max()) - low + 1
    keys = (ra - low) * width + (rb - low)
    space = (int(ra.max()) - low + 1) * width
    if space <= 1 << 16:
        # Small tables (a few shardings and specs): by a table of every pair, without a sort.
        first_at = np.full(space, n)
        np.minimum.at(first_at, keys, np.arange(n))
        distinct = np.flatnonzero(first_at < n)
        firsts = first_at[distinct]
        number = np.zeros(space, np.int64)
        number[distinct] = np.arange(len(distinct))
        inverse = number[keys]
    else:
        distinct, firsts, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    pairs = [(k // width + low, k % width + low) for k in distinct[order].tolist()]
    return rank[inverse], pairs


def _payload(given: Any) -> bytes:
    """A payload's bytes: as given, or a live (treedef, leaves) pair written as specs."""
    if isinstance(given, bytes | bytearray | memoryview):
        return bytes(given)
    if isinstance(given, tuple) and len(given) == 2:
        from colocated_wire.encode import serialize_specs

        return serialize_specs(*given)
    raise TypeError(f"a payload is bytes or a (treedef, leaves) pair, not {type(given).__name__}")


def _read(data: bytes, which: str) -> DiffSide:
    try:
        return read_side(data)
    except DecodeError as e:
        raise DiffInputError(which, e) from e


def _leaf_count(side: DiffSide) -> int:
    return sum(len(p.leaf_refs) for p in side.parts)
