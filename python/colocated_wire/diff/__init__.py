"""Why two payloads differ: `diff(a, b)` compares two payloads of one kind by value,
and returns the differences grouped by cause and named by tree path, the same result as
`colocated-wire diff --json` (src/diff/). docs/diff.md says how to read it.

A payload is read as decoding checks it, then from its checked messages (diff/read_side.py);
its trees are walked side by side once (tree_walk.py), each pair of facing leaves compared by
their table entries' values once (compare_entries.py, device_order.py), and what differs
gathered by cause (groups.py) with its places collapsed into paths (collapse_paths.py).
"""

from colocated_wire.diff.diff_payloads import DiffInputError, diff
from colocated_wire.diff.format_diff import format_diff
from colocated_wire.diff.payload_diff import DiffDetail, DiffGroup, DiffPath, PayloadDiff

__all__ = [
    "DiffDetail",
    "DiffGroup",
    "DiffInputError",
    "DiffPath",
    "PayloadDiff",
    "diff",
    "format_diff",
]
