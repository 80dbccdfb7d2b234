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
    a run of them (a list of arrays) in numpy: each distinct pair once, then the leaves of the
    pairs that differ."""

    __slots__ = ("groups", "compare", "refs_a", "refs_b", "arrays", "differing")

    def __init__(self, groups: Groups, compare: Any, refs_a: list[int], refs_b: list[int]):
        self.groups, self.compare = groups, compare
        self.refs_a, self.refs_b = refs_a, refs_b
        self.arrays: tuple[np.ndarray, np.ndarray] | None = None
        self.differing = 0

    def node(self, cause: Any, place: Any, leaves: int) -> None:
        self.groups.add(cause, place, leaves)
        self.differing += leaves

    def leaf(self, ia: int, ib: int, parent: Any, container: Any, index: int) -> None:
        causes = self.compare(self.refs_a[ia], self.refs_b[ib])
        if causes:
            self.differing += 1
            for cause in causes:
                self.groups.add_leaf(cause, parent, container, index)

    def leaves(self, ia: int, ib: int, count: int, parent: Any, container: Any) -> None:
        if self.arrays is None:
            self.arrays = (np.asarray(self.refs_a, np.int64), np.asarray(self.refs_b, np.int64))
        ra, rb = self.arrays[0][ia : ia + count], self.arrays[1][ib : ib + count]
        # A pair as one number: a value's leaves that are no entries are negative, so shift.
        low = min(int(ra.min(initial=0)), int(rb.min(initial=0)))
        width = int(rb.max(initial=0)) - low + 1
        keys = (ra - low) * width + (rb - low)
        distinct, first = np.unique(keys, return_index=True)
        # The groups are made in the order the leaves would have made them, one at a time.
        by_cause: dict[str, tuple[Any, list[int]]] = {}
        differing: list[int] = []
        for key in distinct[np.argsort(first)].tolist():
            causes = self.compare(key // width + low, key % width + low)
            if causes:
                differing.append(key)
            for cause in causes:
                by_cause.setdefault(cause.key, (cause, []))[1].append(key)
        if not differing:
            return
        self.differing += int(np.count_nonzero(np.isin(keys, differing)))
        for cause, pairs in by_cause.values():
            at = np.flatnonzero(np.isin(keys, pairs)).tolist()
            self.groups.add_leaves(cause, parent, container, at)


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
