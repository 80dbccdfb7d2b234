"""PyTreeDef <-> TreeDef message: a tree as packed preorder columns.

A spec tree of a thousand leaves is a thousand nodes, so a node costs about
a byte (its kind) instead of a message. Writing is tree_write.py (`lower`,
`write`). Checking reads the columns node by node, counting what a REPEAT or
LEAVES node (1.1) expands to before anything is expanded; lifting rebuilds
the PyTreeDef with `PyTreeDef.from_node_data_and_children`, iteratively, so
a deep tree cannot exhaust Python's recursion limit, and a REPEAT is the very
PyTreeDef its source became. Node types by name, custom node data and the
pickles a tree may hold (1.1, only where pickles are allowed) are tree_nodes.py.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from array import array
from collections.abc import Sequence
from keyword import iskeyword
from typing import TYPE_CHECKING, Any, NamedTuple

from jax import tree_util

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.entries import tree_keys, tree_repeats
from colocated_wire.entries.leaf_copies import check_leaf_copies
from colocated_wire.entries.tree_nodes import (
    Pickled,
    Unordered,
    decode_node_data,
    default_factory,
    find_class,
    is_pickled_node_data,
    namedtuple_class,
    pickles_allowed,
    type_name,
    unpickle_value,
)
from colocated_wire.entries.tree_write import Lowered, lower, write
from colocated_wire.errors import DecodeError, LiftError
from colocated_wire.jax_compat.treedef_build import from_node_data_and_children
from colocated_wire.schema_version import enum_since, field_since, newer_value, require_version

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext

TYPE = tree_util.PyTreeDef

__all__ = [
    "TYPE",
    "Lowered",
    "TreeShape",
    "check",
    "leaf_refs",
    "lift",
    "lift_shape",
    "lower",
    "write",
]

_NONE_TYPE = type(None)
_LEAF, _NONE = tree_pb2.NODE_KIND_LEAF, tree_pb2.NODE_KIND_NONE
_LEAVES, _REPEAT = tree_pb2.NODE_KIND_LEAVES, tree_pb2.NODE_KIND_REPEAT
_CONTAINERS = frozenset(
    {
        tree_pb2.NODE_KIND_TUPLE,
        tree_pb2.NODE_KIND_LIST,
        tree_pb2.NODE_KIND_DICT,
        tree_pb2.NODE_KIND_NAMEDTUPLE,
        tree_pb2.NODE_KIND_CUSTOM,
        tree_pb2.NODE_KIND_ORDERED_DICT,
        tree_pb2.NODE_KIND_DEFAULT_DICT,
    }
)
_KNOWN_KINDS = _CONTAINERS | {
    tree_pb2.NODE_KIND_LEAF,
    tree_pb2.NODE_KIND_NONE,
    tree_pb2.NODE_KIND_LEAVES,
    tree_pb2.NODE_KIND_REPEAT,
}
_DICTS = frozenset(
    {tree_pb2.NODE_KIND_DICT, tree_pb2.NODE_KIND_ORDERED_DICT, tree_pb2.NODE_KIND_DEFAULT_DICT}
)
# The minor version that introduced each node kind, and the pool of keys that are not str.
_KIND_SINCE = enum_since(tree_pb2.NodeKind.DESCRIPTOR)
_KEYS_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "keys")
_FRESH_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "fresh_dict_keys")
_FACTORY_PICKLE_SINCE = field_since(tree_pb2.NodeType.DESCRIPTOR, "pickle")
# Nodes that name a type in node_types: a defaultdict its default_factory, the others their class.
_TYPED = frozenset(
    {tree_pb2.NODE_KIND_DEFAULT_DICT, tree_pb2.NODE_KIND_NAMEDTUPLE, tree_pb2.NODE_KIND_CUSTOM}
)


def _type_ref(type_refs, ti: int, type_count: int, path: str) -> int:
    """The node type of the next typed node, which must exist."""
    if ti >= len(type_refs):
        raise DecodeError(f"{path}.type_refs", "invalid-tree", "too few type refs")
    node_type = type_refs[ti]
    if node_type >= type_count:
        raise DecodeError(f"{path}.type_refs[{ti}]", "invalid-tree", f"no node type {node_type}")
    return node_type


# ---- checking ---------------------------------------------------------------


class Node(NamedTuple):
    kind: int
    arity: int = 0
    keys: tuple[Any, ...] = ()
    node_type: int = -1
    data: bytes = b""


# Most nodes are leaves: one shared Node each for a leaf and a None.
_LEAF_NODE, _NONE_NODE = Node(_LEAF), Node(_NONE)


@dataclasses.dataclass(slots=True)
class TreeShape:
    """A checked tree, still plain data: its written nodes in preorder. The facts of `check`."""

    nodes: list[Node]
    node_types: list[tuple[str, tuple[str, ...], bytes]]
    num_leaves: int  # leaf references written (a REPEAT's are not)
    plain: bool = False  # builtin nodes only
    pickled: bool = False  # holds pickles (1.1): lifted only where pickles are allowed
    # The last lift, and the classes and factories it found (by kind and node type): it is
    # given again while a new lookup finds the same objects.
    lifted: tree_util.PyTreeDef | None = None
    found: dict[tuple[int, int], Any] = dataclasses.field(default_factory=dict)
    # How the written leaf references expand (tree_repeats.expand_leaf_refs); None: as written.
    leaf_plan: list[tuple[int, int, int]] | None = None


# Checked trees by their bytes and the limits that judged them: a program sends the same
# tree on every call. Bounded: trees past _CACHED_BYTES are not kept, and a full cache is
# emptied (no order to keep, and clear() is safe under threads).
_CHECKED: dict[tuple[bytes, int, int, int, int], TreeShape] = {}
_CACHED_TREES = 64
_CACHED_BYTES = 1 << 16


def check(msg: tree_pb2.TreeDef, ctx: CheckContext) -> TreeShape:
    """Checks the columns against each other and the limits, node by node in preorder;
    a tree checked before under the same limits is found by its bytes."""
    limits = ctx.limits
    data = msg.SerializeToString(deterministic=True)
    key = (
        data,
        limits.max_tree_nodes,
        limits.max_tree_depth,
        limits.max_payload_bytes,
        ctx.minor_version,
    )
    shape = _CHECKED.get(key)
    if shape is None:
        shape = _check_columns(msg, ctx, _one_byte_kinds(data, len(msg.kinds)))
        if len(data) <= _CACHED_BYTES:
            if len(_CHECKED) >= _CACHED_TREES:
                _CHECKED.clear()
            _CHECKED[key] = shape
    return shape


def check_tree_of(
    msg: Any, ctx: CheckContext, what: str, leaf_copies: Sequence[int] = ()
) -> TreeShape:
    """Checks a message that holds a tree (Specs, Value): its `treedef` present and valid, and
    its `leaves`, with a Specs' leaf copies (1.3), the leaves of it; returns the treedef's
    facts. `what` names the message in an error ("specs have", "a value has")."""
    path = ctx.path
    if not msg.HasField("treedef"):
        raise DecodeError(f"{path}.treedef", "missing", f"{what} no treedef")
    tctx = type(ctx)(ctx.index, f"{path}.treedef", ctx.refs, ctx.limits, ctx.minor_version)
    shape = check(msg.treedef, tctx)
    check_leaf_copies(leaf_copies, len(msg.leaves), shape.num_leaves, path, ctx.minor_version)
    return shape


def leaf_refs(shape: TreeShape, written: Sequence[int]) -> Sequence[int]:
    """The references of every leaf of a checked tree, given the ones written."""
    if shape.leaf_plan is None:
        return written
    return tree_repeats.expand_leaf_refs(shape.leaf_plan, written)


class _Open:
    """A container whose children are still being read."""

    __slots__ = ("awaited", "index", "nodes_before", "leaves_before", "height")

    def __init__(self, awaited: int, index: int, nodes_before: int, leaves_before: int):
        self.awaited = awaited
        self.index = index
        self.nodes_before = nodes_before
        self.leaves_before = leaves_before
        self.height = 0  # the deepest nesting among its children


def _one_byte_kinds(data: bytes, n: int) -> bytes | None:
    """The kinds column, one byte per node, straight from a TreeDef's canonical bytes (field 1,
    packed, written first) when every kind is one byte; reading bytes is much faster than
    reading the repeated field node by node."""
    if n < 128 or data[:1] != b"\x0a":
        return None
    length = shift = 0
    at = 1
    while at < len(data):
        byte = data[at]
        length |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            break
        shift += 7
    return data[at : at + length] if length == n else None


def _check_columns(
    msg: tree_pb2.TreeDef, ctx: CheckContext, kind_bytes: bytes | None = None
) -> TreeShape:
    """The checks of `check`, in their order, on a tree not seen before. Sizes are counted per
    written node as the tree is read, so a REPEAT is measured, never expanded."""
    path, limits = ctx.path, ctx.limits
    n = len(msg.kinds)
    if n > limits.max_tree_nodes:
        raise DecodeError(
            f"{path}.kinds",
            "limit-exceeded",
            f"{n} nodes exceed the limit of {limits.max_tree_nodes}",
        )
    if n == 0:
        raise DecodeError(f"{path}.kinds", "invalid-tree", "a tree has no nodes")
    minor = ctx.minor_version
    kinds: Sequence[int] = msg.kinds if kind_bytes is None else kind_bytes
    arities, dict_keys = msg.arities, msg.dict_keys
    type_refs, node_data, node_types = msg.type_refs, msg.node_data, msg.node_types
    strings = tree_keys.str_pool(msg, path, minor, limits.max_tree_nodes, limits.max_payload_bytes)
    fresh = msg.fresh_dict_keys
    pool_size = len(strings) + len(msg.keys)
    pool = _KeyPool(msg, strings, path, limits)
    pickled = False
    if fresh:
        require_version(f"{path}.fresh_dict_keys", "fresh_dict_keys", _FRESH_SINCE, minor)
        if dict_keys:
            detail = "fresh_dict_keys leaves dict_keys empty"
            raise DecodeError(f"{path}.dict_keys", "invalid-tree", detail)
    has_leaves, has_repeat = _LEAVES in kinds, _REPEAT in kinds
    ai = di = ti = ci = 0
    written_leaves = 0
    # The expanded tree so far: nodes and leaves; per written node, its expanded subtree.
    total = leaves = 0
    # Per written node, kept only when a REPEAT may read them: its expanded subtree's size
    # (0 while open), leaves, first leaf and height.
    m = n if has_repeat else 0
    sizes, leaf_counts, leaf_starts, heights = (array("q", bytes(8 * m)) for _ in range(4))
    plan: list[tuple[int, int, int]] = []
    repeats = False
    nodes: list[Node] = []
    pending: list[_Open] = []
    for i, kind in enumerate(kinds):
        if i and not pending:
            raise DecodeError(
                f"{path}.kinds[{i}]", "invalid-tree", "nodes follow the end of the tree"
            )
        if kind not in _KNOWN_KINDS:
            raise newer_value(f"{path}.kinds[{i}]", f"node kind {kind}", minor) or DecodeError(
                f"{path}.kinds[{i}]", "unknown-enum", f"unknown node kind {kind}"
            )
        since = _KIND_SINCE[kind]
        if since:
            if since > minor:
                name = tree_pb2.NodeKind.Name(kind).removeprefix("NODE_KIND_").lower()
                require_version(f"{path}.kinds[{i}]", name, since, minor)
        if has_repeat:
            leaf_starts[i] = leaves
        children = 1  # of the parent's awaited children, how many this node is
        height = 0
        if kind == _LEAF:
            written_leaves += 1
            _plan_leaves(plan, written_leaves - 1, 1)
            size = count = 1
            nodes.append(_LEAF_NODE)
        elif kind == _NONE:
            size, count = 1, 0
            nodes.append(_NONE_NODE)
        elif kind == _LEAVES:
            if i == 0:
                raise DecodeError(f"{path}.kinds[0]", "invalid-tree", "a run of leaves is no root")
            ai = _take(arities, ai, i, path)
            k = arities[ai - 1]
            if k < 2 or k > pending[-1].awaited:
                detail = f"a run of {k} leaves, {pending[-1].awaited} children awaited"
                raise DecodeError(f"{path}.arities[{ai - 1}]", "invalid-tree", detail)
            _plan_leaves(plan, written_leaves, k)
            written_leaves += k
            size = count = children = k
            nodes.append(Node(kind, k))
        elif kind == _REPEAT:
            ai = _take(arities, ai, i, path)
            source = arities[ai - 1]
            at = f"{path}.arities[{ai - 1}]"
            if source >= i or not sizes[source]:
                raise DecodeError(at, "forward-reference", f"node {i} repeats node {source}")
            if kinds[source] == _LEAVES:
                raise DecodeError(at, "invalid-tree", "a run of leaves is not a subtree")
            size, count, height = sizes[source], leaf_counts[source], heights[source]
            if total + size > limits.max_tree_nodes:
                raise _too_many(path, i, limits.max_tree_nodes)
            if len(pending) + height > limits.max_tree_depth:
                raise DecodeError(
                    f"{path}.kinds[{i}]",
                    "limit-exceeded",
                    f"tree depth exceeds the limit of {limits.max_tree_depth}",
                )
            if count:
                plan.append((1, leaf_starts[source], count))
            repeats = True
            nodes.append(Node(kind, source))
        else:
            ai = _take(arities, ai, i, path)
            arity = arities[ai - 1]
            # A LEAVES run is one node and many children, so only a tree without them has
            # this bound.
            if not has_leaves and arity > n - i - 1:
                raise DecodeError(
                    f"{path}.arities[{ai - 1}]",
                    "invalid-tree",
                    f"node {i} claims {arity} children, only {n - i - 1} nodes follow",
                )
            keys: tuple[Any, ...] = ()
            node_type = -1
            data = b""
            if kind in _DICTS:
                if fresh:
                    if di + arity > pool_size:
                        detail = f"the key pool has {pool_size} keys, the dicts use more"
                        raise DecodeError(f"{path}.fresh_dict_keys", "invalid-tree", detail)
                elif di + arity > len(dict_keys):
                    raise DecodeError(f"{path}.dict_keys", "invalid-tree", "too few dict keys")
                is_sorted = kind != tree_pb2.NODE_KIND_ORDERED_DICT
                keys = _check_dict_keys(msg, pool, di, arity, is_sorted, path, minor)
                di += arity
            if kind in _TYPED:
                node_type = _type_ref(type_refs, ti, len(node_types), path)
                ti += 1
            if kind in _TYPED and node_types[node_type].pickle:
                _check_pickled_type(node_types[node_type], kind, node_type, path, minor)
                pickled = True
            if kind == tree_pb2.NODE_KIND_DEFAULT_DICT:
                if node_types[node_type].fields:
                    raise DecodeError(
                        f"{path}.node_types[{node_type}].fields",
                        "invalid-value",
                        "the default_factory of a defaultdict has no fields",
                    )
            elif kind in _TYPED:
                if kind == tree_pb2.NODE_KIND_NAMEDTUPLE:
                    fields = list(node_types[node_type].fields)
                    if len(fields) != arity:
                        raise DecodeError(
                            f"{path}.arities[{ai - 1}]",
                            "invalid-tree",
                            f"a namedtuple of {len(fields)} fields has {arity} children",
                        )
                    _check_namedtuple_type(node_types[node_type], f"{path}.node_types[{node_type}]")
                else:
                    if ci >= len(node_data):
                        raise DecodeError(f"{path}.node_data", "invalid-tree", "too few node data")
                    data = node_data[ci]
                    ci += 1
                    pickled = pickled or is_pickled_node_data(data)
            nodes.append(Node(kind, arity, keys, node_type, data))
            if arity:
                total += 1
                if total > limits.max_tree_nodes:
                    raise _too_many(path, i, limits.max_tree_nodes)
                pending.append(_Open(arity, i, total - 1, leaves))
                if len(pending) > limits.max_tree_depth:
                    raise DecodeError(
                        f"{path}.kinds[{i}]",
                        "limit-exceeded",
                        f"tree depth exceeds the limit of {limits.max_tree_depth}",
                    )
                continue
            size, count = 1, 0
        total += size
        if total > limits.max_tree_nodes:
            raise _too_many(path, i, limits.max_tree_nodes)
        leaves += count
        if has_repeat:
            sizes[i], leaf_counts[i], heights[i] = size, count, height
        # The node fills `children` places of its parent; full containers close.
        while pending:
            top = pending[-1]
            top.awaited -= children
            top.height = max(top.height, height)
            if top.awaited:
                break
            pending.pop()
            height = top.height + 1
            if has_repeat:
                j = top.index
                sizes[j] = total - top.nodes_before
                leaf_counts[j] = leaves - top.leaves_before
                heights[j] = height
            children = 1
    if pending:
        raise DecodeError(f"{path}.kinds", "invalid-tree", "the tree ends before its last node")
    for name, used, have in (
        ("arities", ai, len(arities)),
        ("dict_keys", di, di if fresh else len(dict_keys)),
        ("type_refs", ti, len(type_refs)),
        ("node_data", ci, len(node_data)),
    ):
        if used != have:
            raise DecodeError(
                f"{path}.{name}", "invalid-tree", f"{have} entries where the kinds imply {used}"
            )
    if fresh and di != pool_size:
        detail = f"the dicts take {di} keys of a pool of {pool_size}"
        raise DecodeError(f"{path}.fresh_dict_keys", "invalid-tree", detail)
    types = [(t.name, tuple(t.fields), t.pickle) for t in node_types]
    return TreeShape(
        nodes,
        types,
        written_leaves,
        plain=ti == 0,
        pickled=pickled or pool.pickled,
        leaf_plan=plan if repeats else None,
    )


def _take(arities: Sequence[int], ai: int, i: int, path: str) -> int:
    """The next arities entry, which must exist: the new count of entries taken."""
    if ai >= len(arities):
        raise DecodeError(f"{path}.arities", "invalid-tree", "fewer arities than containers")
    return ai + 1


def _too_many(path: str, i: int, limit: int) -> DecodeError:
    detail = f"the tree expands past the limit of {limit} nodes"
    return DecodeError(f"{path}.kinds[{i}]", "limit-exceeded", detail)


def _plan_leaves(plan: list[tuple[int, int, int]], first: int, count: int) -> None:
    """Adds written leaves to the plan, joined to the run before when they follow it."""
    if plan and not plan[-1][0] and plan[-1][1] + plan[-1][2] == first:
        plan[-1] = (0, plan[-1][1], plan[-1][2] + count)
    else:
        plan.append((0, first, count))


def _check_dict_keys(
    msg: tree_pb2.TreeDef,
    pool: _KeyPool,
    first: int,
    arity: int,
    is_sorted: bool,
    path: str,
    minor: int,
) -> tuple[Any, ...]:
    """A dict node's keys from the key pool (one that is not a str only from 1.1 on), strictly
    increasing as JAX sorts them when `is_sorted`, else distinct. With fresh_dict_keys, the
    j-th dict key is the pool's j-th key."""
    dict_keys, keys = msg.dict_keys, msg.keys
    fresh = msg.fresh_dict_keys
    strings = pool.strings
    n = len(strings)
    ks: list[Any] = []
    seen: set[Any] = set()  # an ordered dict's keys so far; 1 and True are one key
    for j in range(first, first + arity):
        k = j if fresh else dict_keys[j]
        if k < n or not keys:
            if k >= n:
                raise DecodeError(
                    f"{path}.dict_keys[{j}]", "invalid-tree", f"no string {k} in strings"
                )
            key: Any = strings[k]
        else:
            where = f"{path}.dict_keys[{j}]"
            require_version(where, "a dict key that is not a str", _KEYS_SINCE, minor)
            if k - n >= len(keys):
                raise DecodeError(where, "invalid-tree", f"no key {k} in strings and keys")
            key = pool.get(k - n)
        problem = _order_problem(ks[-1], key) if is_sorted and ks else None
        if not is_sorted:
            problem = f"dict key {key!r} repeats" if key in seen else None
            seen.add(key)
        if problem:
            raise DecodeError(f"{path}.dict_keys[{j}]", "invalid-tree", problem)
        ks.append(key)
    return tuple(ks)


def _order_problem(a: Any, b: Any) -> str | None:
    """Why `a` may not come before `b` among a sorted dict's keys (Python's `<`, as JAX
    sorts), or None; a pickled key decides nothing."""
    try:
        return None if a < b else "dict keys are not distinct and sorted"
    except Unordered:
        return None
    except TypeError:
        return f"dict keys {a!r} and {b!r} cannot be sorted together"


class _KeyPool:
    """The keys that are not str, read in pool order up to the one asked for: a tuple's items
    are keys before it, so nothing recurses, and what tuples expand to is bounded by the
    tree limits (the keys of a pool of n entries can nest n deep)."""

    def __init__(self, msg: tree_pb2.TreeDef, strings: Sequence[str], path: str, limits):
        self.strings = strings
        self.keys = msg.keys
        self.path = path
        self.limits = limits
        self.values: list[Any] = []
        self.sizes: list[int] = []
        self.depths: list[int] = []
        self.total = 0
        self.pickled = False

    def get(self, m: int) -> Any:
        while len(self.values) <= m:
            self._read(len(self.values))
        return self.values[m]

    def _read(self, m: int) -> None:
        key = self.keys[m]
        at = f"{self.path}.keys[{m}]"
        case = key.WhichOneof("key")
        size = depth = 1
        if case is None:
            raise DecodeError(at, "missing", "a dict key has no value")
        if case == "none":
            if not key.none:
                raise DecodeError(f"{at}.none", "invalid-value", "none is true when set")
            value: Any = None
        elif case == "float":
            value = key.float
            if math.isnan(value):
                raise DecodeError(f"{at}.float", "invalid-value", "a float key is never NaN")
        elif case == "pickle":
            value = Pickled(key.pickle)
            self.pickled = True
        elif case == "tuple":
            n = len(self.strings)
            items: list[Any] = []
            for i, ref in enumerate(key.tuple.items):
                if ref >= n + m:
                    detail = f"key {n + m} of the pool holds key {ref}, which is not before it"
                    raise DecodeError(f"{at}.tuple.items[{i}]", "forward-reference", detail)
                if ref < n:
                    items.append(self.strings[ref])
                    size += 1
                else:
                    items.append(self.values[ref - n])
                    size += self.sizes[ref - n]
                    depth = max(depth, self.depths[ref - n] + 1)
            value = tuple(items)
            if depth > self.limits.max_tree_depth:
                detail = f"a tuple key nests past the limit of {self.limits.max_tree_depth}"
                raise DecodeError(at, "limit-exceeded", detail)
        else:
            value = getattr(key, case)
        self.total += size
        if self.total > self.limits.max_tree_nodes:
            detail = f"the keys expand past the limit of {self.limits.max_tree_nodes} nodes"
            raise DecodeError(at, "limit-exceeded", detail)
        self.values.append(value)
        self.sizes.append(size)
        self.depths.append(depth)


def _check_pickled_type(t: tree_pb2.NodeType, kind: int, ref: int, path: str, minor: int) -> None:
    """A node type may be pickled (1.1) as a custom node's class (its name kept, to show) or a
    defaultdict's factory (with no name: an empty name is None's); a namedtuple never is."""
    at = f"{path}.node_types[{ref}]"
    if kind == tree_pb2.NODE_KIND_NAMEDTUPLE:
        detail = "a namedtuple type is not pickled (it is made again from its fields)"
        raise DecodeError(f"{at}.pickle", "invalid-value", detail)
    require_version(f"{at}.pickle", "a pickled node type", _FACTORY_PICKLE_SINCE, minor)
    if kind == tree_pb2.NODE_KIND_DEFAULT_DICT and t.name:
        detail = "a pickled default_factory has no name"
        raise DecodeError(f"{at}.name", "invalid-value", detail)


def _check_namedtuple_type(t: tree_pb2.NodeType, path: str) -> None:
    if not t.name:
        raise DecodeError(f"{path}.name", "invalid-value", "a namedtuple type has no name")
    fields = list(t.fields)
    for j, f in enumerate(fields):
        if not f.isidentifier() or iskeyword(f) or f.startswith("_") or f in fields[:j]:
            raise DecodeError(f"{path}.fields[{j}]", "invalid-value", f"bad field name {f!r}")


# ---- lifting ----------------------------------------------------------------

# ---- lifting ----------------------------------------------------------------


def lift(msg: tree_pb2.TreeDef, ctx: LiftContext) -> tree_util.PyTreeDef:
    """The PyTreeDef of a checked tree, rebuilt bottom-up from its facts (`lift_shape`)."""
    return lift_shape(ctx.facts)


def lift_shape(shape: TreeShape) -> tree_util.PyTreeDef:
    """The PyTreeDef of a checked tree's facts. A tree checked before gives the PyTreeDef it
    gave then (immutable, as JAX's are) while its namedtuple and custom classes and default
    factories are still the objects found then; a tree of builtin nodes found none."""
    if shape.pickled and not pickles_allowed():
        unpickle_value(b"", "tree (a dict key, custom node data or default_factory)")
    lifted, found = shape.lifted, shape.found
    if lifted is not None and (not found or _found_again(shape, found)):
        return lifted
    found = {}
    treedef = _build(shape, found)
    shape.lifted, shape.found = treedef, found
    return treedef


def _found_again(shape: TreeShape, found: dict[tuple[int, int], Any]) -> bool:
    """Whether a new lookup of each class and factory a lift found gives the same object."""
    return all(_resolve(shape, k) is obj for k, obj in found.items())


def _build(shape: TreeShape, classes: dict[tuple[int, int], Any]) -> tree_util.PyTreeDef:
    """The PyTreeDef of a checked tree's written nodes, each container built when its last
    child is; a REPEAT is the very PyTreeDef its source became (they are immutable)."""
    datas: dict[bytes, Any] = {}
    leaf, none = _make(None, []), _make((_NONE_TYPE, None), [])
    nodes = shape.nodes
    built: list[Any] = [None] * len(nodes)
    # Open containers: [awaited children, node index, children so far].
    stack: list[list[Any]] = []
    for i, node in enumerate(nodes):
        kind = node.kind
        if kind == _LEAF:
            new = [leaf]
        elif kind == _NONE:
            new = [none]
        elif kind == _LEAVES:
            new = [leaf] * node.arity
        elif kind == _REPEAT:
            new = [built[node.arity]]
        elif node.arity:
            stack.append([node.arity, i, []])
            continue
        else:
            new = [_make(_node_data(shape, node, classes, datas), [])]
        built[i] = new[0]
        while stack:
            top = stack[-1]
            top[2] += new
            top[0] -= len(new)
            if top[0]:
                break
            stack.pop()
            j = top[1]
            built[j] = _make(_node_data(shape, nodes[j], classes, datas), top[2])
            new = [built[j]]
    return built[0]


def _make(nd: tuple[Any, Any] | None, children: list[Any]) -> tree_util.PyTreeDef:
    """A PyTreeDef node; a class JAX cannot rebuild is a LiftError naming it."""
    try:
        return from_node_data_and_children(tree_util.default_registry, nd, children)
    except RuntimeError as e:  # JAX's word for a class that is not a pytree node here
        name = type_name(nd[0]) if nd else "leaf"
        raise LiftError(f"pytree node type {name} is not registered in this process") from e
    except (ValueError, TypeError) as e:
        name = type_name(nd[0]) if nd else "leaf"
        raise LiftError(f"cannot rebuild pytree node {name}: {e}") from e


def _node_data(
    shape: TreeShape, node: Node, classes: dict[tuple[int, int], Any], datas: dict[bytes, Any]
) -> tuple[Any, Any]:
    """(class, aux data) of a container, as PyTreeDef.from_node_data_and_children takes it;
    `classes` and `datas` keep what was found and decoded for the other nodes."""
    kind = node.kind
    if kind == tree_pb2.NODE_KIND_TUPLE:
        return (tuple, None)
    if kind == tree_pb2.NODE_KIND_LIST:
        return (list, None)
    keys = _lift_keys(node.keys, datas) if shape.pickled and node.keys else node.keys
    if kind == tree_pb2.NODE_KIND_DICT:
        return (dict, list(keys))
    if kind == tree_pb2.NODE_KIND_ORDERED_DICT:
        return (collections.OrderedDict, keys)
    key = (kind, node.node_type)
    found = classes.get(key)
    if found is None:
        found = classes[key] = _resolve(shape, key)
    if kind == tree_pb2.NODE_KIND_DEFAULT_DICT:
        return (collections.defaultdict, (found, keys))
    if kind == tree_pb2.NODE_KIND_NAMEDTUPLE:
        return (found, None)
    aux = datas.get(node.data, datas)
    if aux is datas:
        try:
            aux = datas[node.data] = decode_node_data(node.data)
        except (ValueError, TypeError) as e:
            name = shape.node_types[node.node_type][0]
            raise LiftError(f"cannot rebuild pytree node {name}: {e}") from e
    return (found, aux)


def _lift_keys(keys: tuple[Any, ...], datas: dict[bytes, Any]) -> tuple[Any, ...]:
    """Keys with their pickled ones (and tuples holding them) loaded, each pickle once."""

    def lift_key(k: Any) -> Any:
        if type(k) is Pickled:
            found = datas.get(("k", k.data), datas)
            if found is datas:
                found = datas[("k", k.data)] = unpickle_value(k.data, "dict key")
            return found
        if type(k) is tuple:
            return tuple(map(lift_key, k))
        return k

    return tuple(map(lift_key, keys))


def _resolve(shape: TreeShape, key: tuple[int, int]) -> Any:
    """What a typed node's node type names in this process: a defaultdict's factory, a
    namedtuple class (made if missing) or a custom node class."""
    kind, node_type = key
    name, fields, pickled = shape.node_types[node_type]
    if kind == tree_pb2.NODE_KIND_DEFAULT_DICT:
        if pickled:
            return unpickle_value(pickled, "default_factory of a defaultdict")
        return default_factory(name)
    if kind == tree_pb2.NODE_KIND_NAMEDTUPLE:
        return namedtuple_class(name, fields)
    if pickled:
        return unpickle_value(pickled, f"pytree node type {name}")
    cls = find_class(name)
    if cls is None:
        raise LiftError(f"pytree node type {name} is not defined in this process")
    return cls
