"""Leaf copies (colocated.v1.3): a specs tree's leaf references written with each run that
repeats earlier ones as one copy of three numbers: the written leaves before it (after the copy
before it), how far back it starts, how many leaves it makes.

A copy reads the leaves made so far one at a time, so one that overlaps what it makes repeats a
cycle: S2's 10,000 leaves in a cycle of 16 shardings are 16 leaves and one copy. TypeScript:
src/entries/leaf-copies.ts, which finds the same copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.schema_version import field_since, require_version

LEAF_COPIES_SINCE = field_since(payload_pb2.Specs.DESCRIPTOR, "leaf_copies")

# The shortest run a copy makes: the writer looks runs up by their first MIN_COPY leaves.
MIN_COPY = 4


def find_leaf_copies(refs: Sequence[int]) -> tuple[list[int], list[int]]:
    """(leaves, copies): walking the references, each run of at least MIN_COPY that starts as the
    latest earlier run seen with the same first MIN_COPY references (runs inside a copy are not
    seen) becomes a copy, as long as the two agree, when its three numbers (and, for the first,
    the field's tag and length) take fewer bytes than the references it makes. Both languages
    find the same copies."""
    refs = list(refs)
    n = len(refs)
    leaves: list[int] = []
    copies: list[int] = []
    if n <= MIN_COPY:
        return refs, copies
    latest: dict[tuple[int, ...], int] = {}
    gap = i = 0
    while i + MIN_COPY <= n:
        run = tuple(refs[i : i + MIN_COPY])
        p = latest.get(run)
        latest[run] = i
        if p is not None:
            length = _agreeing(refs, p, i)
            cost = (0 if copies else _FIELD_BYTES) + _size_of_copy(gap, i - p, length)
            if _worth_copying(refs, i, length, cost):
                copies += (gap, i - p, length)
                gap = 0
                i += length
                continue
        leaves.append(refs[i])
        gap += 1
        i += 1
    leaves += refs[i:]
    return leaves, copies


def _agreeing(refs: list[int], p: int, i: int) -> int:
    """How far the runs at p < i agree (at least MIN_COPY), comparing slices: galloping up, then
    halving down, so a run of 10,000 costs a few dozen slice compares, not a Python loop."""
    n = len(refs)
    length, step, missed = MIN_COPY, 16, False
    while step and i + length < n:
        m = min(step, n - i - length)
        if refs[p + length : p + length + m] == refs[i + length : i + length + m]:
            length += m
            if not missed:
                step *= 2
        else:
            missed = True
            step //= 2
    return length


# What the first copy adds on top of its numbers: leaf_copies' tag and (for the few copies a
# payload has) its one-byte length.
_FIELD_BYTES = 2


def _size_of_copy(gap: int, distance: int, count: int) -> int:
    """The bytes a copy's three numbers take."""
    return _varint_size(gap) + _varint_size(distance) + _varint_size(count)


def _worth_copying(refs: list[int], at: int, length: int, cost: int) -> bool:
    """Whether a copy that costs `cost` bytes takes fewer than the references it makes."""
    if cost < length:  # every reference takes a byte at least
        return True
    return cost < sum(map(_varint_size, refs[at : at + length]))


def _varint_size(value: int) -> int:
    """The bytes a uint32 takes as a varint."""
    return (
        1
        if value < 0x80
        else 2
        if value < 0x4000
        else 3
        if value < 0x200000
        else 4
        if value < 0x10000000
        else 5
    )


def check_leaf_copies(
    copies: Sequence[int], written: int, leaf_count: int, path: str, minor_version: int
) -> None:
    """Checks a Specs' leaf copies against its written leaves and the leaves its tree takes,
    before any is made: three numbers per copy, each after written leaves that are there,
    reaching back to a leaf made before it, making at least one, all making `leaf_count`
    (without copies, the written leaves are the tree's)."""
    if not copies:
        if written != leaf_count:
            detail = f"the tree has {leaf_count} leaves, the payload {written}"
            raise DecodeError(f"{path}.leaves", "invalid-tree", detail)
        return
    at = f"{path}.leaf_copies"
    require_version(at, "leaf copies", LEAF_COPIES_SINCE, minor_version)
    if len(copies) % 3:
        raise DecodeError(at, "invalid-tree", f"{len(copies)} numbers, three per copy")
    read = made = 0
    for c in range(0, len(copies), 3):
        gap, distance, count = copies[c], copies[c + 1], copies[c + 2]
        if gap > written - read:
            detail = f"copy {c // 3} follows {gap} written leaves; {written - read} are left"
            raise DecodeError(f"{at}[{c}]", "invalid-tree", detail)
        read += gap
        made += gap
        if distance == 0:
            detail = f"copy {c // 3} starts at the leaf it makes first"
            raise DecodeError(f"{at}[{c + 1}]", "forward-reference", detail)
        if distance > made:
            detail = f"copy {c // 3} starts {distance} leaves back from leaf {made}"
            raise DecodeError(f"{at}[{c + 1}]", "reference-out-of-range", detail)
        if count == 0:
            raise DecodeError(f"{at}[{c + 2}]", "invalid-tree", f"copy {c // 3} makes no leaves")
        made += count
        if made + (written - read) > leaf_count:
            detail = f"the leaves pass the tree's {leaf_count} at copy {c // 3}"
            raise DecodeError(f"{at}[{c + 2}]", "invalid-tree", detail)
    made += written - read
    if made != leaf_count:
        detail = (
            f"the tree has {leaf_count} leaves, the payload {made}"
            f" ({written} written, {made - written} copied)"
        )
        raise DecodeError(f"{path}.leaves", "invalid-tree", detail)


def expand_leaf_copies(written: Sequence[int], copies: Sequence[int]) -> Sequence[int]:
    """The leaves made: the written ones with every (checked) copy expanded, a slice at a time
    (an overlapping copy doubles what it has made until it is done)."""
    if not copies:
        return written
    out: list[int] = []
    w = 0
    for c in range(0, len(copies), 3):
        gap, distance, count = copies[c], copies[c + 1], copies[c + 2]
        out += written[w : w + gap]
        w += gap
        # What is made from `start` on repeats with period `distance`, so each step can copy
        # all of it: a cycle of 16 grows to 10,000 leaves in ten slices.
        start = len(out) - distance
        while count > 0:
            part = out[start : start + min(count, len(out) - start)]
            out += part
            count -= len(part)
    out += written[w:]
    return out
