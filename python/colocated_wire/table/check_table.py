"""Checking a table: every entry, in index order, by its kind's `check`.

A payload comes from a peer that is not trusted. Each entry is checked in
turn (within an entry, in field-number order), and the first problem is a
`DecodeError` with its path and code. Checks read generated messages only
and build no JAX object; what they compute anyway (a device list's ids, a
tile assignment's logical ids) is kept as the entry's facts for lifting.
"""

from __future__ import annotations

import dataclasses

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
    for i, entry in enumerate(table.entries):
        kind = entry.WhichOneof("kind")
        codec = ENTRIES.get(kind)
        facts = None
        if codec is not None:  # else a kind of a newer minor version, lifted as its bytes
            ctx = CheckContext(i, f"{path}[{i}].{kind}", refs, limits, minor_version)
            facts = codec.check(getattr(entry, kind), ctx)
        refs.kinds.append(kind)
        refs.facts.append(facts)
    return refs
