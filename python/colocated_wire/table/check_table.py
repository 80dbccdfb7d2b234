"""Checking a table: every entry, in index order, by its kind's `check`.

A payload comes from a peer that is not trusted. Each entry is checked in
turn (within an entry, in field-number order), and the first problem is a
`DecodeError` with its path and code. Checks read generated messages only
and build no JAX object; what they compute anyway (a device list's ids, a
tile assignment's logical ids) is kept as the entry's facts for lifting.
A program sends the same table on every call, and a check is a function of
the table's bytes, the limits and the header's minor version alone, so a
table checked before is found by them instead of checked again.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries import ENTRIES
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits
from colocated_wire.table.references import References


@dataclasses.dataclass(slots=True)
class CheckContext:
    """Where a message sits: its entry's index, its path, the entries before it, the limits,
    and the payload header's minor version (a construct of a newer one is refused)."""

    index: int  # the table's size for what sits outside the table
    path: str
    refs: References
    limits: DecodeLimits
    minor_version: int = 0


class _Checked(NamedTuple):
    """What checking a table found: each entry's kind and facts (arrays made read-only), and
    the plans lifting makes of its entries (plain values, no JAX object)."""

    kinds: tuple[str | None, ...]
    facts: tuple[Any, ...]
    plans: list[Any]


# Checked tables by (bytes, limits, minor version). Bounded by what they hold, bytes and facts
# together (a few bytes of iota can be a million ids): past the budget the cache is emptied,
# and a table too big for it is not kept.
_CHECKED: dict[tuple[bytes, DecodeLimits, int], _Checked] = {}
_BUDGET = 1 << 24
_held = 0


def check_table(
    table: table_pb2.SharedObjectTable | None,
    limits: DecodeLimits,
    minor_version: int = 0,
    path: str = "table",
) -> References:
    """Checks every entry in index order; `None` is an absent table. `minor_version` is the
    header's."""
    if table is None:
        raise DecodeError(path, "missing", "a payload needs its table")
    n = len(table.entries)
    if n > limits.max_table_entries:
        raise DecodeError(
            f"{path}.entries",
            "limit-exceeded",
            f"{n} entries exceed the limit of {limits.max_table_entries}",
        )
    refs = References(table)
    data = table.SerializeToString(deterministic=True)
    key = (data, limits, minor_version)
    found = _CHECKED.get(key)
    if found is not None:
        refs.kinds, refs.facts, refs.plans = list(found.kinds), list(found.facts), found.plans
        return refs
    for i, entry in enumerate(table.entries):
        kind = entry.WhichOneof("kind")
        codec = ENTRIES.get(kind)
        facts = None
        if codec is not None:  # else a kind of a newer minor version, lifted as its bytes
            ctx = CheckContext(i, f"{path}[{i}].{kind}", refs, limits, minor_version)
            facts = codec.check(getattr(entry, kind), ctx)
        refs.kinds.append(kind)
        refs.facts.append(facts)
    refs.plans = [None] * n
    _remember(key, refs)
    return refs


def _remember(key: tuple[bytes, DecodeLimits, int], refs: References) -> None:
    global _held
    size = len(key[0])
    arrays = {id(f): f for f in refs.facts if isinstance(f, np.ndarray)}  # a mesh shares its list's
    for facts in arrays.values():
        facts.flags.writeable = False  # shared by every decode of this table from now on
        size += facts.nbytes
    if size > _BUDGET // 4:
        return
    if _held + size > _BUDGET:
        _CHECKED.clear()
        _held = 0
    _CHECKED[key] = _Checked(tuple(refs.kinds), tuple(refs.facts), refs.plans)
    _held += size
