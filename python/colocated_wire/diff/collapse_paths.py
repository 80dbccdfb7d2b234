"""A group's places as few paths: siblings whose differing leaves lie alike below them become
one [*] (or .*), so the leaves of 1,000 layers read ["layers"][*]["w"]. TypeScript:
src/diff/collapse-paths.ts, the same steps."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from colocated_wire.diff.payload_diff import DiffPath

# Siblings are collapsed when at least this many lie alike: two are clearer named.
COLLAPSE_AT = 3

# The shapes of a node without children: no path ends there (the root only), or some do.
_BARE, _END = 0, 1


class PathComponent(NamedTuple):
    """One step of a path: the part it starts in, an item ([0], ["w"]) or a field (.w)."""

    kind: str  # "part", "item" or "field"
    text: str  # the index or key as written between brackets, or the field; "*" once collapsed


class _Trie:
    __slots__ = ("kind", "text", "end", "children", "shape", "leaves")

    def __init__(self, kind: str, text: str):
        self.kind = kind
        self.text = text
        self.end = 0  # how many paths end here
        self.children: dict[str, _Trie] | None = None
        self.shape = _BARE  # what lies below (ends and steps, not counts), interned
        self.leaves = -1  # for a leaf's path, how many leaves lie below the node, if known


def collapse_paths(places: Sequence[Any], step: Callable[[Any], PathComponent]) -> list[DiffPath]:
    """Places (each with a `parent` place, None at a part's root) collapsed into paths, in the
    order they were first given; each step is named once (`step`), however many places lie
    below it."""
    paths = _PathTrie(step)
    # A place with no place below it lies alike with its siblings of the same kind (nothing
    # below): COLLAPSE_AT or more of them are counted into their * at once, where the first
    # would have stood, rather than each given a node first.
    above: set[Any] = set()
    for place in places:
        at = place.parent
        while at is not None and at not in above:
            above.add(at)
            at = at.parent
    bare: dict[Any, int] = {}
    for place in places:
        if place.parent is not None and place not in above:
            bare[place.parent] = bare.get(place.parent, 0) + 1
    for place in places:
        parent = place.parent
        if parent is None or place in above or bare[parent] < COLLAPSE_AT:
            paths.node_of(place).end += 1
        else:
            paths.star_of(parent, lambda place=place: step(place).kind).end += 1
    return paths.finish()


class LeafRun(NamedTuple):
    """Leaves of one container: its children `indices`, the container at `parent` (None: the
    leaf is `parent` itself, a part's root)."""

    parent: Any
    container: Any
    indices: Sequence[int]


def collapse_leaf_paths(
    runs: Sequence[LeafRun],
    leaf_step: Callable[[Any, int], PathComponent],
    step: Callable[[Any], PathComponent],
) -> list[DiffPath]:
    """Leaves collapsed into paths, in the order they were given, child `index` of a run's
    container one step on (`leaf_step`). Nothing lies below a leaf, so only the leaves of one
    parent are counted before the paths are built: 10,000 leaves cost a few nodes, not 10,000."""
    paths = _PathTrie(step, of_leaves=True)
    counts: dict[Any, int] = {}
    for run in runs:
        counts[run.parent] = counts.get(run.parent, 0) + len(run.indices)
    for parent, container, indices in runs:
        if container is None:
            paths.node_of(parent).end += len(indices)
        elif counts[parent] >= COLLAPSE_AT:
            kind = lambda c=container, i=indices[0]: leaf_step(c, i).kind  # noqa: E731
            paths.star_of(parent, kind).end += len(indices)
        else:
            for index in indices:
                leaf = _child_of(paths.node_of(parent), leaf_step(container, index))
                leaf.end += 1
                leaf.leaves = 1
    return paths.finish()


class _PathTrie:
    """The trie of a group's paths: a node per step, built from places."""

    def __init__(self, step: Callable[[Any], PathComponent], of_leaves: bool = False):
        self.root = _Trie("part", "")
        self.step = step
        # The paths are leaves': a node whose every leaf is among them stands for them all.
        self.of_leaves = of_leaves
        self._nodes: dict[Any, _Trie] = {}
        self._stars: dict[Any, _Trie] = {}

    def node_of(self, place: Any) -> _Trie:
        """The node of a place: the places up to the first one met before, then down again."""
        chain = []
        at, known = place, None
        while at is not None:
            known = self._nodes.get(at)
            if known is not None:
                break
            chain.append(at)
            at = at.parent
        node = known if known is not None else self.root
        for at in reversed(chain):
            node = _child_of(node, self.step(at))
            node.leaves = at.leaves
            self._nodes[at] = node
        return node

    def star_of(self, parent: Any, kind: Callable[[], str]) -> _Trie:
        """The * of the bare children of the place `parent`, made where the first of them
        stands."""
        star = self._stars.get(parent)
        if star is None:
            star = self._stars[parent] = _child_of(self.node_of(parent), PathComponent(kind(), "*"))
        return star

    def finish(self) -> list[DiffPath]:
        """The paths, once siblings alike are collapsed, children before their parents."""
        shapes: dict[str, int] = {}
        order = _preorder(self.root)
        if self.of_leaves:
            _complete_subtrees(order)
        for node in reversed(order):
            if node.children is None:
                node.shape = _END if node.end > 0 else _BARE
                continue
            _collapse_children(node)
            steps: list[Any] = [node.end > 0]
            for c in node.children.values():
                steps += [c.kind, c.text, c.shape]
            key = json.dumps(steps, ensure_ascii=False)
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = len(shapes) + 2
            node.shape = shape
        return _emit(self.root)


def _child_of(node: _Trie, component: PathComponent) -> _Trie:
    """The child of `node` one step on; children are keyed by their text, unique in a
    container."""
    if node.children is None:
        node.children = {}
    child = node.children.get(component.text)
    if child is None:
        child = node.children[component.text] = _Trie(component.kind, component.text)
    return child


def _preorder(root: _Trie) -> list[_Trie]:
    """Every node, parents before children, without recursion (paths may be 1,000 deep)."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if node.children is not None:
            stack.extend(reversed(node.children.values()))
    return out


def _complete_subtrees(order: list[_Trie]) -> None:
    """A node every leaf below which is among the paths (two or more: one is named as it is)
    becomes one path that ends there, with all their count: "1,303 leaves under (root)" rather
    than nineteen paths that list them."""
    totals: dict[_Trie, int] = {}
    for node in reversed(order):
        total = node.end + sum(totals[c] for c in (node.children or {}).values())
        totals[node] = total
        if node.children is not None and total == node.leaves and total > 1:
            node.children = None
            node.end = total


def _collapse_children(node: _Trie) -> None:
    """Replaces each set of COLLAPSE_AT or more alike siblings by one *, where the first
    stood."""
    siblings = node.children
    if len(siblings) < COLLAPSE_AT:
        return
    alike: dict[int, list[_Trie]] = {}
    for child in siblings.values():
        if child.kind != "part":
            alike.setdefault(_alike_key(child), []).append(child)
    if not any(len(s) >= COLLAPSE_AT for s in alike.values()):
        return
    children: dict[str, _Trie] = {}
    for key, child in siblings.items():
        same = alike.get(_alike_key(child))
        if same is None or len(same) < COLLAPSE_AT:
            children[key] = child
        elif same[0] is child:
            star = _Trie(child.kind, "*")
            star.end, star.children, star.shape = child.end, child.children, child.shape
            for other in same[1:]:
                _absorb(star, other)
            # No text is a bare "*" (keys are quoted, indices are numbers, fields are names).
            children[f"*{_alike_key(child)}"] = star
    node.children = children


def _alike_key(node: _Trie) -> int:
    """Siblings lie alike when they are steps of one kind with the same shape below."""
    return node.shape * 2 + (1 if node.kind == "field" else 0)


def _absorb(into: _Trie, other: _Trie) -> None:
    """Adds the ends of `other` to `into`, which lies alike (same shape: same steps below)."""
    if other.children is None:
        into.end += other.end
        return
    stack = [(into, other)]
    while stack:
        a, b = stack.pop()
        a.end += b.end
        if b.children is not None:
            for key, child in b.children.items():
                stack.append((a.children[key], child))


def _emit(root: _Trie) -> list[DiffPath]:
    """The collapsed paths, in preorder, each with its count."""
    out = []
    stack = [(part, part.text, "") for part in reversed(list((root.children or {}).values()))]
    while stack:
        node, part, path = stack.pop()
        if node.end > 0:
            out.append(DiffPath(part, path, node.end))
        for child in reversed(list((node.children or {}).values())):
            text = f".{child.text}" if child.kind == "field" else f"[{child.text}]"
            stack.append((child, part, path + text))
    return out
