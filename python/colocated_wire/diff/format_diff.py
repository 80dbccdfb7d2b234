"""A diff as the CLI prints it: a first line that says whether the payloads are the same, and
how many leaves differ in how many groups; then a line per group, its places then its cause.
TypeScript: src/diff/format-diff.ts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colocated_wire.diff.describe import count_text, thousands

if TYPE_CHECKING:
    from colocated_wire.diff.payload_diff import DiffGroup, PayloadDiff

# Causes found at leaves (counted in leaves); the tree's are found at nodes.
LEAF_CAUSES = frozenset(
    {
        "shape",
        "dtype",
        "key_shape",
        "weak_type",
        "sharding",
        "mesh",
        "devices",
        "leaf_kind",
        "prng_impl",
        "pickle",
        "function",
        "leaf",
    }
)
# How many paths a line names before "and N more".
PATHS_SHOWN = 3


def format_diff(diff: PayloadDiff, names: tuple[str, str] = ("a", "b")) -> str:
    """The diff in lines, the payloads named `names`."""
    a, b = names
    if diff.same:
        first = f"{a} and {b} are the same ({thousands(diff.bytes[0])} bytes)"
    elif diff.equal:
        first = f"{a} and {b}: bytes differ, contents equal"
    else:
        leaves = count_text(diff.differing_leaves, "leaf", "leaves")
        first = f"{a} and {b} differ: {leaves} in {count_text(len(diff.groups), 'group', 'groups')}"
    show_part = diff.kind == "program"
    return "\n".join([first, *(f"  {_group_line(g, show_part)}" for g in diff.groups)])


def _group_line(group: DiffGroup, show_part: bool) -> str:
    """1,000 leaves under ["layers"][*]["w"]: sharding #2 to #5, ..."""
    if not group.paths:
        return group.text
    at_leaves = group.cause in LEAF_CAUSES
    if at_leaves:
        places = count_text(group.count, "leaf", "leaves")
    else:
        places = count_text(group.count, "node", "nodes")
    where = "under" if at_leaves and group.count > 1 else "at"
    paths = [
        f"{p.part}{p.path}" if show_part else (p.path or "(root)")
        for p in group.paths[:PATHS_SHOWN]
    ]
    more = len(group.paths) - PATHS_SHOWN
    paths_text = f"{', '.join(paths)} and {thousands(more)} more" if more > 0 else ", ".join(paths)
    leaves = ""
    if not at_leaves and group.leaves > 0:
        leaves = f" ({count_text(group.leaves, 'leaf', 'leaves')})"
    return f"{places} {where} {paths_text}: {group.text}{leaves}"
