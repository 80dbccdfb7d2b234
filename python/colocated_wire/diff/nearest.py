"""Why a function was specialized again, in a few lines: the plugin's `install(explain=True)`
and the worker's `--explain` compare a new specialization with the earlier ones of the same
function, and name what differs from the nearest.

A specialization is written as a program whose function is `stand_in`: its input specs, its
devices and (the worker's) output specs, and never the function itself, whose pickle may be
large and says nothing about why the cache missed. Those bytes are small, so the plugin can
keep a few per function. Python only: TypeScript has no specializations to explain.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from colocated_wire.diff.describe import count_text
from colocated_wire.diff.diff_payloads import diff
from colocated_wire.diff.format_diff import format_diff
from colocated_wire.diff.payload_diff import PayloadDiff
from colocated_wire.encode import serialize_program
from colocated_wire.payload.writer import Writer

# The groups a summary names before "and N more".
GROUPS_SHOWN = 3
# Asks for explanations where no option says (the plugin's install, the worker's flags).
ENV = "COLOCATED_WIRE_EXPLAIN"


def explain_from_env() -> bool:
    """Whether COLOCATED_WIRE_EXPLAIN asks for explanations: 1, true, yes or on."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def stand_in(*args: Any, **kwargs: Any) -> None:
    """The function of a specialization's payload: one name for all, so that they differ only
    in their specs and devices."""
    raise NotImplementedError("a specialization's stand-in function is never called")


def specialization(
    in_treedef: Any,
    in_leaves: Sequence[Any],
    out_treedef: Any,
    out_leaves: Sequence[Any] | None,
    devices: Any,
    *,
    allow_pickle: bool = False,
    writer: Writer | None = None,
) -> bytes:
    """A specialization's bytes: a program of `stand_in`, these specs and devices, and the
    writer that wrote them (none: the diff then shows no writer change)."""
    return serialize_program(
        stand_in,
        in_treedef,
        in_leaves,
        out_treedef,
        out_leaves,
        devices,
        allow_pickle=allow_pickle,
        writer=writer,
    )


def nearest(new: bytes, earlier: Sequence[bytes]) -> tuple[int, PayloadDiff]:
    """The earlier specialization with the fewest differing leaves (then groups; then the
    latest), by its index in `earlier`, and the diff from it to `new`."""
    best: tuple[int, PayloadDiff] | None = None
    for i, old in enumerate(earlier):
        d = diff(old, new)
        if best is None or _distance(d) <= _distance(best[1]):
            best = (i, d)
    if best is None:
        raise ValueError("no earlier specialization to compare with")
    return best


def _distance(d: PayloadDiff) -> tuple[int, int, int]:
    return (d.differing_leaves, len(d.groups), 0 if d.equal else 1)


def summary(d: PayloadDiff, names: tuple[str, str], groups: int = GROUPS_SHOWN) -> list[str]:
    """The diff's first line and its first `groups` groups, then "and N more groups"."""
    lines = format_diff(d, names).split("\n")
    shown, more = lines[: 1 + groups], len(lines) - 1 - groups
    if more > 0:
        shown.append(f"  and {count_text(more, 'more group', 'more groups')}")
    return shown
