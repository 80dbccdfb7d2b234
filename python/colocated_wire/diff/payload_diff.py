"""What `diff` returns: the data `colocated-wire diff --json` prints (src/diff/payload-diff.ts).

The fields are snake_case here and camelCase in the JSON (`to_json`), so the
inspector, the plugin's logging and tools read one shape, whichever language
compared the payloads. docs/diff.md describes every field; `version` changes
with the shape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from colocated_wire.diff.format_diff import format_diff

# The version of this shape.
DIFF_VERSION = 1


@dataclasses.dataclass(frozen=True, slots=True)
class DiffDetail:
    """One field that differs within a table object (a sharding, a mesh, a device list)."""

    field: str  # "spec", "spec.unreduced", "memory_kind", "axis_names", "devices", ...
    a: Any
    b: Any
    change: Any  # for a device order, how it changed (docs/diff.md); else None
    text: str  # "PartitionSpec('data', 'model') to ('model', 'data')"

    def to_json(self) -> dict[str, Any]:
        """The detail as the CLI's --json prints it."""
        change, text = self.change, self.text
        return {"field": self.field, "a": self.a, "b": self.b, "change": change, "text": text}


@dataclasses.dataclass(frozen=True, slots=True)
class DiffPath:
    """Where a group's difference is: a tree path with [*] where indices or keys vary."""

    part: str  # "specs", "input", "output" or "value"
    path: str  # as JAX's keystr writes it, ["layers"][*]["w"]; "" for the root
    count: int  # the leaves (or, for a tree difference, nodes) it stands for

    def to_json(self) -> dict[str, Any]:
        """The path as the CLI's --json prints it."""
        return {"part": self.part, "path": self.path, "count": self.count}


@dataclasses.dataclass(frozen=True, slots=True)
class DiffGroup:
    """Every place one cause is found, the leaves it covers, and the cause itself."""

    cause: str
    text: str  # the difference in words, as the CLI prints it after the places
    count: int  # places: leaves for a leaf's cause, nodes for the tree's, 0 for the payload's
    leaves: int  # the leaves it covers: the leaves differing, or on one side only
    paths: tuple[DiffPath, ...]
    entries: tuple[int | None, int | None] | None  # the table entries it names, in A and B
    a: Any
    b: Any
    details: tuple[DiffDetail, ...]

    def to_json(self) -> dict[str, Any]:
        """The group as the CLI's --json prints it."""
        entries = None if self.entries is None else {"a": self.entries[0], "b": self.entries[1]}
        return {
            "cause": self.cause,
            "text": self.text,
            "count": self.count,
            "leaves": self.leaves,
            "paths": [p.to_json() for p in self.paths],
            "entries": entries,
            "a": self.a,
            "b": self.b,
            "details": [d.to_json() for d in self.details],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class PayloadDiff:
    """Two payloads compared; `str()` gives the lines the CLI prints."""

    kind: str  # "specs", "program" or "value"
    same: bool  # the bytes are identical
    equal: bool  # the contents are equal (no group); the bytes may still differ
    bytes: tuple[int, int]
    leaves: tuple[int, int]
    differing_leaves: int  # pairs that are not equal, and leaves on one side only
    groups: tuple[DiffGroup, ...]
    version: int = DIFF_VERSION

    def to_json(self) -> dict[str, Any]:
        """The result as `colocated-wire diff --json` prints it."""
        return {
            "version": self.version,
            "kind": self.kind,
            "same": self.same,
            "equal": self.equal,
            "bytes": {"a": self.bytes[0], "b": self.bytes[1]},
            "leaves": {"a": self.leaves[0], "b": self.leaves[1]},
            "differingLeaves": self.differing_leaves,
            "groups": [g.to_json() for g in self.groups],
        }

    def __str__(self) -> str:
        return format_diff(self)
