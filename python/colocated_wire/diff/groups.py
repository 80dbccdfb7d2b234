"""Differences gathered by cause: each cause is found once per pair of objects (or nodes), and
every place it is found joins its group, so 1,000 leaves on one changed sharding are one line.
TypeScript: src/diff/groups.ts."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

from colocated_wire.diff.collapse_paths import (
    LeafRun,
    PathComponent,
    collapse_leaf_paths,
    collapse_paths,
)
from colocated_wire.diff.describe import json_key
from colocated_wire.diff.payload_diff import DiffDetail, DiffGroup
from colocated_wire.diff.read_side import TreeNode
from colocated_wire.entries.tree_nodes import Pickled


class Cause(NamedTuple):
    """A difference before it is placed; `key` names its group (equal keys, one group)."""

    key: str
    cause: str
    text: str
    entries: tuple[int | None, int | None] | None
    a: Any
    b: Any
    details: tuple[DiffDetail, ...]


def value_cause(cause: str, a: Any, b: Any, text: str) -> Cause:
    """A cause of two values and no details: "shape (8, 4) to (8, 8)"."""
    return Cause(f"{cause}|{json_key(a)}|{json_key(b)}", cause, text, None, a, b, ())


class Place:
    """Where a node sits, made only for the places that differ: child `index` of the container
    whose own place is `parent`, or (no container) the root of a part; and how many leaves lie
    below it in A's tree, which tells a path that covers all of them."""

    __slots__ = ("parent", "part", "container", "index", "leaves")

    def __init__(
        self, parent: Place | None, part: str, container: TreeNode | None, index: int, leaves: int
    ):
        self.parent = parent
        self.part = part
        self.container = container
        self.index = index
        self.leaves = leaves


def part_root(part: str, leaves: int) -> Place:
    """The root of a part's tree, with `leaves` leaves."""
    return Place(None, part, None, -1, leaves)


def child_place(parent: Place, container: TreeNode, index: int, leaves: int) -> Place:
    """The child `index` of `container`, which sits at `parent`, with `leaves` leaves below."""
    return Place(parent, parent.part, container, index, leaves)


@dataclasses.dataclass(slots=True)
class _Group:
    cause: Cause
    leaves: int = 0
    places: list[Place] = dataclasses.field(default_factory=list)  # a cause found at nodes
    runs: list[LeafRun] = dataclasses.field(default_factory=list)  # at leaves, by container


class Groups:
    """The groups of one comparison, in the order their causes were first found."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._last: tuple[Cause, _Group] | None = None  # most differing leaves repeat a cause

    def add(self, cause: Cause, place: Place | None, leaves: int) -> None:
        """Adds a node where `cause` was found (none for the payload's own), covering `leaves`."""
        group = self._group_of(cause)
        if place is not None:
            group.places.append(place)
        group.leaves += leaves

    def add_leaf(self, cause: Cause, parent: Place, container: TreeNode | None, index: int) -> None:
        """Adds a leaf where `cause` was found: child `index` of `container` (None: `parent`)."""
        self.add_leaves(cause, parent, container, [index])

    def add_leaves(
        self, cause: Cause, parent: Place, container: TreeNode | None, indices: Sequence[int]
    ) -> None:
        """Adds leaves where `cause` was found: children `indices` of `container`, in order.
        The sequence is kept as it is (the caller lets go of it), and copied only if later
        leaves of the same container join it."""
        group = self._group_of(cause)
        runs = group.runs
        if runs and runs[-1].parent is parent and runs[-1].container is container:
            last = runs[-1]
            if type(last.indices) is not list:
                runs[-1] = last = last._replace(indices=list(last.indices))
            last.indices.extend(indices)
        else:
            runs.append(LeafRun(parent, container, indices))
        group.leaves += len(indices)

    def finish(self) -> list[DiffGroup]:
        """The groups, each with its places collapsed into paths."""
        out = []
        for group in self._groups.values():
            cause, places, runs = group.cause, group.places, group.runs
            if places:
                paths = collapse_paths(places, step_to)
            else:
                paths = collapse_leaf_paths(runs, component_of, step_to)
            count = len(places) + sum(len(run.indices) for run in runs)
            out.append(
                DiffGroup(
                    cause.cause,
                    cause.text,
                    count,
                    group.leaves,
                    tuple(paths),
                    cause.entries,
                    cause.a,
                    cause.b,
                    cause.details,
                )
            )
        return out

    def _group_of(self, cause: Cause) -> _Group:
        last = self._last
        if last is not None and last[0] is cause:
            return last[1]
        group = self._groups.get(cause.key)
        if group is None:
            group = self._groups[cause.key] = _Group(cause)
        self._last = (cause, group)
        return group


def step_to(place: Place) -> PathComponent:
    """The step to a place, as JAX's keystr writes it: ["key"] or [0] (an item), .name (a
    field)."""
    container = place.container
    if container is None:
        return PathComponent("part", place.part)
    return component_of(container, place.index)


def component_of(container: TreeNode, index: int) -> PathComponent:
    """The step to child `index` of `container`."""
    if container.kind in ("dict", "ordered_dict", "default_dict"):
        return PathComponent("item", key_text(container.keys[index]))
    if container.kind == "namedtuple":
        return PathComponent("field", container.fields[index])
    return PathComponent("item", str(index))


def key_text(key: Any) -> str:
    """A dict key as TypeScript's dictKeyText writes it (src/model/tree-dict-keys.ts): a str as
    JSON, True, 0, 1.5, None, b'x' as Python's repr, a tuple of these, a pickle by its bytes."""
    import base64
    import json

    if key is None:
        return "None"
    if isinstance(key, bool):
        return "True" if key else "False"
    if isinstance(key, int | float):
        return repr(key)
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if isinstance(key, bytes):
        return repr(key)
    if isinstance(key, Pickled):
        return f"<pickled {base64.b64encode(key.data).decode()}>"
    items = [key_text(k) for k in key]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
