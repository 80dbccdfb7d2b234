"""References between entries, checked by the referenced entry's oneof case.

A reference is in range, points backwards when an entry holds it (so one
forward pass checks and lifts the table, and a cycle cannot be written), and
lands on an entry of a kind its field accepts. `References` is what checking
knows of the table so far: each entry's message, its oneof case (None for a
kind unknown here) and the facts its check returned, which lifting reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf.message import Message

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.errors import DecodeError


class References:
    """The entries checked so far, their oneof cases and their facts."""

    def __init__(self, table: table_pb2.SharedObjectTable):
        self.entries = table.entries
        self.table_size = len(table.entries)
        self.kinds: list[str | None] = []
        self.facts: list[Any] = []
        # Per entry, what lifting needs of its message as plain values, with the function that
        # lifts them (lift_table's steps), made on first lift (None: not yet); a table checked
        # before shares its list with every decode of it.
        self.plans: list[Any] | None = None

    def message(self, index: int) -> Message:
        """The message of a checked entry of a known kind (its oneof case's value)."""
        return getattr(self.entries[index], self.kinds[index])

    def check(
        self,
        value: int,
        path: str,
        kinds: frozenset[str],
        *,
        before: int | None = None,
        allow_unknown: bool = False,
    ) -> int:
        """A reference is in range, before entry `before` (if given) and of a kind in `kinds`."""
        if value >= self.table_size:
            raise DecodeError(
                path,
                "reference-out-of-range",
                f"entry {value} is not in a table of {self.table_size} entries",
            )
        if before is not None and value >= before:
            raise DecodeError(
                path, "forward-reference", f"entry {before} refers to entry {value}, not before it"
            )
        kind = self.kinds[value]
        if kind in kinds or (kind is None and allow_unknown):
            return value
        want = " or ".join(sorted(kinds))
        raise DecodeError(
            path, "wrong-entry-kind", f"entry {value} is a {kind or 'unknown'}, not {want}"
        )

    def require(
        self, msg: Message, field: str, path: str, kinds: frozenset[str], before: int
    ) -> int:
        """A required reference field of the entry at `before`."""
        if not msg.HasField(field):
            raise DecodeError(path, "missing", f"{field} is required")
        return self.check(getattr(msg, field), path, kinds, before=before)

    def check_all(
        self,
        values: Iterable[int],
        path: str,
        kinds: frozenset[str],
        *,
        allow_unknown: bool = False,
    ) -> None:
        """References from outside the table, `path[k]` each; a path is built only on failure."""
        size, found = self.table_size, self.kinds
        for k, value in enumerate(values):
            if value >= size or not (
                found[value] in kinds or (allow_unknown and found[value] is None)
            ):
                self.check(value, f"{path}[{k}]", kinds, allow_unknown=allow_unknown)
