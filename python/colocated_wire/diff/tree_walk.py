"""Two trees walked side by side, once: what differs in their structure is reported at its
node, and each pair of leaves that face each other is handed on, to be compared by their
entries. Without recursion (trees may be 1,000 deep). TypeScript: src/diff/tree-walk.ts."""

from __future__ import annotations

import base64
from typing import Any, Protocol

from colocated_wire.diff.describe import change, list_text, thousands
from colocated_wire.diff.groups import Cause, Place, child_place, key_text, part_root, value_cause
from colocated_wire.diff.read_side import LEAF, NONE, TreeNode
from colocated_wire.entries.tree_nodes import Pickled

_ORDERED = frozenset({"tuple", "list", "custom"})  # children face each other in order
_KEYED = frozenset({"dict", "ordered_dict", "default_dict", "namedtuple"})  # by key


class WalkSink(Protocol):
    """What a walk finds."""

    def node(self, cause: Cause, place: Place, leaves: int) -> None:
        """A difference at the node at `place`, covering `leaves` leaves that face nothing."""

    def leaf(self, ia: int, ib: int, parent: Place, container: TreeNode | None, index: int) -> None:
        """Leaf `ia` of A faces leaf `ib` of B, as child `index` of `container` (None: root)."""

    def leaves(self, ia: int, ib: int, count: int, parent: Place, container: TreeNode) -> None:
        """Leaves `ia + k` of A face `ib + k` of B, as children k < `count` of `container`."""


class _Frame:
    """A pair of containers whose children are being walked."""

    __slots__ = ("a", "b", "place", "pairs", "starts", "next", "count", "pa", "pb")

    def __init__(self, a: TreeNode, b: TreeNode, place: Place, pa: int, pb: int):
        self.a, self.b, self.place = a, b, place
        # The children's pairs (A's index, B's index), or None for 0, 1, 2, ... on both sides;
        # with pairs, where each pair's leaves start on each side.
        self.pairs: list[int] | None = None
        self.starts: list[int] | None = None
        self.next = 0
        self.count = 0
        self.pa, self.pb = pa, pb  # without pairs, where the next child's leaves start


def walk_trees(part: str, a: TreeNode, b: TreeNode, leaves: int, sink: WalkSink) -> None:
    """Walks part `part` of both payloads: A's tree `a`, of `leaves` leaves, against B's tree
    `b`. The part's leaves are known: counting them again would cost a pass over the tree."""
    counts = _LeafCounts()
    root = part_root(part, leaves)
    if a.kind == "leaf" and b.kind == "leaf":
        sink.leaf(0, 0, root, None, -1)
        return
    first = _compare_nodes(a, b, root, 0, 0, sink, counts)
    stack = [first] if first is not None else []
    leaf = sink.leaf
    while stack:
        frame = stack[-1]
        fa, fb, pairs, starts, count, place = (
            frame.a,
            frame.b,
            frame.pairs,
            frame.starts,
            frame.count,
            frame.place,
        )
        ca_all, cb_all = fa.children, fb.children
        # The frame's cursor in locals while its children are walked (most are leaves).
        k, pa, pb = frame.next, frame.pa, frame.pb
        inner = None
        while k < count and inner is None:
            i = pairs[2 * k] if pairs is not None else k
            j = pairs[2 * k + 1] if pairs is not None else k
            ca, cb = ca_all[i], cb_all[j]
            sa = starts[2 * k] if starts is not None else pa
            sb = starts[2 * k + 1] if starts is not None else pb
            k += 1
            if ca.kind == "leaf" and cb.kind == "leaf":
                leaf(sa, sb, place, fa, i)
                pa += 1
                pb += 1
                continue
            if starts is None:
                pa += counts.of(ca)
                pb += counts.of(cb)
            if ca.kind != "none" or cb.kind != "none":
                at = child_place(place, fa, i, counts.of(ca))
                inner = _compare_nodes(ca, cb, at, sa, sb, sink, counts)
        frame.next, frame.pa, frame.pb = k, pa, pb
        if inner is not None:
            stack.append(inner)
        else:
            stack.pop()


def _compare_nodes(
    a: TreeNode, b: TreeNode, place: Place, pa: int, pb: int, sink: WalkSink, counts: _LeafCounts
) -> _Frame | None:
    """Compares two nodes that are not both leaves: reports what differs in them, and returns
    the frame of their children when those face each other."""
    ma, mb = _matching(a), _matching(b)
    da, db = _describe_node(a), _describe_node(b)
    if ma is None or ma != mb:
        if da != db:
            sink.node(_node_cause("node", da, db), place, counts.of(a) + counts.of(b))
        return None
    if da != db:
        sink.node(_node_cause("node", da, db), place, 0)
    for cause in _node_field_causes(a, b):
        sink.node(cause, place, 0)
    frame = _Frame(a, b, place, pa, pb)
    if ma == "order" or _same_keys(_keys_of(a), _keys_of(b)):
        na, nb = len(a.children), len(b.children)
        frame.count = min(na, nb)
        if na != nb:
            extra = counts.sum(a.children, frame.count) + counts.sum(b.children, frame.count)
            sink.node(_node_cause("length", na, nb), place, extra)
        # Children that are all leaves (a list of arrays) face each other as one run.
        if not _all_leaves(a) or not _all_leaves(b):
            return frame
        sink.leaves(pa, pb, frame.count, place, a)
        return None
    return _keyed_frame(frame, sink, counts)


def _keyed_frame(frame: _Frame, sink: WalkSink, counts: _LeafCounts) -> _Frame:
    """The frame of two keyed containers whose keys differ: keys on one side only are
    reported."""
    a, b, place = frame.a, frame.b, frame.place
    keys_a, keys_b = _keys_of(a), _keys_of(b)
    in_b = {_identity(key): j for j, key in enumerate(keys_b)}
    pairs: list[int] = []
    removed: list[int] = []
    matched: set[int] = set()
    for i, key in enumerate(keys_a):
        j = in_b.get(_identity(key))
        if j is None:
            removed.append(i)
        else:
            pairs += [i, j]
            matched.add(j)
    added = [j for j in range(len(keys_b)) if j not in matched]
    field = a.kind == "namedtuple" and b.kind == "namedtuple"
    leaves = sum(counts.of(a.children[i]) for i in removed)
    leaves += sum(counts.of(b.children[j]) for j in added)
    if removed or added:
        removed_texts = [_key_text(keys_a[i], field) for i in removed]
        added_texts = [_key_text(keys_b[j], field) for j in added]
        sink.node(_keys_cause(removed_texts, added_texts, field), place, leaves)
    if a.kind == "ordered_dict" and b.kind == "ordered_dict":
        order = pairs[1::2]
        if any(order[k] < order[k - 1] for k in range(1, len(order))):
            in_a = [_key_text(keys_a[i], False) for i in pairs[0::2]]
            in_order = [_key_text(keys_b[j], False) for j in sorted(order)]
            cause = value_cause("key_order", in_a, in_order, "")
            text = f"key order {list_text(in_a)} to {list_text(in_order)}"
            sink.node(cause._replace(text=text), place, 0)
    starts_a = counts.starts(a.children, frame.pa)
    starts_b = counts.starts(b.children, frame.pb)
    frame.pairs = pairs
    frame.starts = [starts_a[x] if k % 2 == 0 else starts_b[x] for k, x in enumerate(pairs)]
    frame.count = len(pairs) // 2
    return frame


def _node_field_causes(a: TreeNode, b: TreeNode) -> list[Cause]:
    """What differs in two containers' own fields: a custom node's data and class, a factory."""
    causes = []
    if a.kind == "custom" and b.kind == "custom" and a.type_name == b.type_name:
        if a.node_data != b.node_data:
            data_a, data_b = _data_text(a.node_data), _data_text(b.node_data)
            causes.append(_node_cause("node_data", data_a, data_b))
        pickle_a, pickle_b = a.type_pickle or b"", b.type_pickle or b""
        if pickle_a != pickle_b:
            cause = value_cause("class_pickle", len(pickle_a), len(pickle_b), "")
            words = f"{_bytes_text(len(pickle_a))} to {_bytes_text(len(pickle_b))}"
            causes.append(cause._replace(text=f"the pickled class differs ({words})"))
    if a.kind == "default_dict" and b.kind == "default_dict":
        fa, fb = _factory_text(a.default_factory), _factory_text(b.default_factory)
        if fa != fb:
            cause = value_cause("default_factory", _factory_json(fa), _factory_json(fb), "")
            text = f"default_factory {_factory_words(fa)} to {_factory_words(fb)}"
            causes.append(cause._replace(text=text))
    return causes


def _describe_node(node: TreeNode) -> str:
    """A node's type in words: leaf, None, tuple, dict, OrderedDict, namedtuple m.T, m.Custom."""
    kind = node.kind
    if kind == "none":
        return "None"
    if kind == "ordered_dict":
        return "OrderedDict"
    if kind == "default_dict":
        return "defaultdict"
    if kind == "namedtuple":
        return f"namedtuple {node.type_name}"
    if kind == "custom":
        return node.type_name
    return kind


def _all_leaves(node: TreeNode) -> bool:
    return node.children.count(LEAF) == len(node.children)  # a C loop, by identity first


def _matching(node: TreeNode) -> str | None:
    if node.kind in _ORDERED:
        return "order"
    return "key" if node.kind in _KEYED else None


def _keys_of(node: TreeNode) -> tuple[Any, ...]:
    """A keyed container's keys: a dict's, or a namedtuple's fields."""
    return node.fields if node.kind == "namedtuple" else node.keys


def _identity(key: Any) -> Any:
    """A key as Python's equality has it (1 == 1.0 == True), as a dict holds it."""
    return key


def _same_keys(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def _key_text(key: Any, field: bool) -> str:
    return key if field else key_text(key)


def _node_cause(cause: str, a: Any, b: Any) -> Cause:
    """A cause of a node's two descriptions: "tuple to list", "length 3 to 4", "node data ..."."""
    words = {"node": "", "length": "length ", "node_data": "node data "}[cause]
    return value_cause(cause, a, b, f"{words}{change(str(a), str(b))}")


def _keys_cause(removed: list[str], added: list[str], field: bool) -> Cause:
    """Keys on one side only: key "bias" added, fields w, b removed."""

    def noun(n: int) -> str:
        if field:
            return "field" if n == 1 else "fields"
        return "key" if n == 1 else "keys"

    words = []
    if removed:
        words.append(f"{noun(len(removed))} {list_text(removed)} removed")
    if added:
        words.append(f"{noun(len(added))} {list_text(added)} added")
    return value_cause("keys", removed, added, ", ".join(words))


def _data_text(data: bytes) -> str:
    """Node data as Python's repr of bytes when short, else its size."""
    return repr(data) if len(data) <= 64 else f"<{_bytes_text(len(data))}>"


def _bytes_text(n: int) -> str:
    return f"{thousands(n)} {'byte' if n == 1 else 'bytes'}"


def _factory_text(factory: str | Pickled | None) -> str | None:
    """A factory as a string equal exactly when written alike ("\\0" + base64 when pickled)."""
    if isinstance(factory, Pickled):
        return "\0" + base64.b64encode(factory.data).decode()
    return factory


def _factory_json(text: str | None) -> Any:
    """A factory in the result: its name, None for None, {"pickled": bytes} for a pickle."""
    return {"pickled": len(text) - 1} if text is not None and text.startswith("\0") else text


def _factory_words(text: str | None) -> str:
    if text is None:
        return "None"
    return "a pickled factory" if text.startswith("\0") else text


class _LeafCounts:
    """Leaves below each node, counted once per container (a REPEAT's subtree is one node)."""

    def __init__(self) -> None:
        self._counts: dict[TreeNode, int] = {}

    def of(self, node: TreeNode) -> int:
        """The leaves below `node`."""
        if node.kind == "leaf":
            return 1
        if node.kind == "none":
            return 0
        known = self._counts.get(node)
        if known is not None:
            return known
        stack = [(node, False)]  # children before parents, without recursion
        while stack:
            at, done = stack.pop()
            if done:
                self._counts[at] = self.sum(at.children, 0)
                continue
            stack.append((at, True))
            for child in at.children:
                if child.kind not in ("leaf", "none") and child not in self._counts:
                    stack.append((child, False))
        return self._counts[node]

    def sum(self, children: list[TreeNode], start: int) -> int:
        """The leaves below `children[start:]`; leaves and Nones are counted in C."""
        part = children[start:] if start else children
        leaves = part.count(LEAF)
        if leaves + part.count(NONE) == len(part):
            return leaves
        return leaves + sum(self.of(c) for c in part if c is not LEAF and c is not NONE)

    def starts(self, children: list[TreeNode], base: int) -> list[int]:
        """Where each child's leaves start, the first at `base`."""
        out, at = [], base
        for child in children:
            out.append(at)
            at += self.of(child)
        return out
