"""PyTreeDef <-> TreeDef message: a tree as packed preorder columns.

A spec tree of a thousand leaves is a thousand nodes, so a node costs about
a byte (its kind) instead of a message. Lowering walks the PyTreeDef with
`node_data()` / `children()`; lifting rebuilds it bottom-up with
`PyTreeDef.from_node_data_and_children`, iteratively, so a deep tree cannot
exhaust Python's recursion limit.

Node types travel by name, "module.QualName". Lifting looks a class up in
`sys.modules` and never imports anything. A namedtuple that is not found is
synthesized with the same name and fields (one class per name and fields,
so equal payloads give equal treedefs); a custom node that is not found is a
`LiftError`.

colocated.v1.1 adds dict keys that are not str (int, bool, None: a pool of
typed keys after `strings`), OrderedDict nodes (keys in insertion order) and
defaultdict nodes (keys sorted; the default_factory by qualified name, looked
up like a node type, None as an empty name). For a 1.0 target an OrderedDict,
and a defaultdict whose factory is None, are written as the custom nodes 1.0
wrote for them; the rest is an EncodeError naming 1.1.

Custom node data is opaque bytes on the wire. This library writes only what
it can read back without running code: aux data `None` is empty bytes;
otherwise `b"j"` followed by compact JSON of a value built from None, bool,
int, str and tuples (written as JSON arrays, read back as tuples), which
covers `register_dataclass` (its aux data is a tuple of meta-field values).
Anything else is an `EncodeError`.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import sys
from keyword import iskeyword
from typing import TYPE_CHECKING, Any, NamedTuple

from jax import tree_util

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.errors import DecodeError, EncodeError, LiftError
from colocated_wire.schema_version import (
    enum_since,
    field_since,
    newer_value,
    refuse_newer,
    require_version,
)
from colocated_wire.version import SCHEMA_MINOR_VERSION

if TYPE_CHECKING:
    from colocated_wire.table.check_table import CheckContext
    from colocated_wire.table.lift_table import LiftContext

TYPE = tree_util.PyTreeDef

_NONE_TYPE = type(None)
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
_KNOWN_KINDS = _CONTAINERS | {tree_pb2.NODE_KIND_LEAF, tree_pb2.NODE_KIND_NONE}
_DICTS = frozenset(
    {tree_pb2.NODE_KIND_DICT, tree_pb2.NODE_KIND_ORDERED_DICT, tree_pb2.NODE_KIND_DEFAULT_DICT}
)
# The minor version that introduced each node kind, and the pool of keys that are not str.
_KIND_SINCE = enum_since(tree_pb2.NodeKind.DESCRIPTOR)
_KEYS_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "keys")
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


_INT64 = range(-(2**63), 2**63)


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


# ---- custom node data -------------------------------------------------------


def _aux_to_json(aux: Any) -> Any:
    if aux is None or isinstance(aux, bool | int | str):
        return aux
    if type(aux) is tuple:
        return [_aux_to_json(a) for a in aux]
    raise EncodeError(
        f"custom pytree node data {aux!r} of type {type(aux).__name__} cannot be encoded:"
        " only None, bool, int, str and tuples of them are supported"
    )


def _aux_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_aux_from_json(v) for v in value)
    if value is None or isinstance(value, bool | int | str):
        return value
    raise ValueError(f"unsupported node data value {value!r}")


def encode_node_data(aux: Any) -> bytes:
    if aux is None:
        return b""
    text = json.dumps(_aux_to_json(aux), separators=(",", ":"), ensure_ascii=False)
    return b"j" + text.encode()


def decode_node_data(data: bytes) -> Any:
    if data == b"":
        return None
    if data[:1] != b"j":
        raise ValueError("node data is not in a format this library writes")
    return _aux_from_json(json.loads(data[1:].decode()))


# ---- lowering ---------------------------------------------------------------


def lower(
    treedef: tree_util.PyTreeDef,
    target: int = SCHEMA_MINOR_VERSION,
    path: str = "treedef",
) -> tree_pb2.TreeDef:
    """The TreeDef message of a PyTreeDef, in preorder, for a reader of minor version `target`;
    what that reader cannot read is an EncodeError at the node (`path`.kinds[i])."""
    kinds: list[int] = []
    arities: list[int] = []
    strings: list[str] = []
    string_index: dict[str, int] = {}
    dict_keys: list[int] = []
    keys: list[tree_pb2.DictKey] = []
    key_index: dict[tuple[type, Any], int] = {}
    node_types: list[tuple[str, tuple[str, ...]]] = []
    type_index: dict[tuple[str, tuple[str, ...]], int] = {}
    type_refs: list[int] = []
    node_data: list[bytes] = []

    def ref_type(key: tuple[str, tuple[str, ...]]) -> None:
        if key not in type_index:
            type_index[key] = len(node_types)
            node_types.append(key)
        type_refs.append(type_index[key])

    def add_keys(node_keys: Any, at: str) -> None:
        # A key that is not a str is written as ~(its index in `keys`) until `strings` is whole.
        for k in node_keys:
            if type(k) is str:
                if k not in string_index:
                    string_index[k] = len(strings)
                    strings.append(k)
                dict_keys.append(string_index[k])
                continue
            pool_key = (type(k), k)
            if pool_key not in key_index:
                refuse_newer(at, f"dict key {k!r}", _KEYS_SINCE, target)
                key_index[pool_key] = len(keys)
                keys.append(_key_message(k, at))
            dict_keys.append(~key_index[pool_key])

    stack = [treedef]
    while stack:
        t = stack.pop()
        nd = t.node_data()
        if nd is None:
            kinds.append(tree_pb2.NODE_KIND_LEAF)
            continue
        cls, aux = nd
        if cls is _NONE_TYPE:
            kinds.append(tree_pb2.NODE_KIND_NONE)
            continue
        at = f"{path}.kinds[{len(kinds)}]"
        children = t.children()
        if cls is tuple:
            kinds.append(tree_pb2.NODE_KIND_TUPLE)
        elif cls is list:
            kinds.append(tree_pb2.NODE_KIND_LIST)
        elif cls is dict:
            kinds.append(tree_pb2.NODE_KIND_DICT)
            add_keys(aux, at)  # JAX sorted them
        elif cls is collections.OrderedDict and target >= 1:
            kinds.append(tree_pb2.NODE_KIND_ORDERED_DICT)
            add_keys(aux, at)
        elif cls is collections.defaultdict and (target >= 1 or aux[0] is not None):
            factory, node_keys = aux
            what = f"a defaultdict with default_factory {factory!r}"
            refuse_newer(at, what, _KIND_SINCE[tree_pb2.NODE_KIND_DEFAULT_DICT], target)
            kinds.append(tree_pb2.NODE_KIND_DEFAULT_DICT)
            add_keys(node_keys, at)
            ref_type((_factory_name(factory, at), ()))
        elif _is_namedtuple(cls) and aux is None:
            kinds.append(tree_pb2.NODE_KIND_NAMEDTUPLE)
            ref_type((type_name(cls), tuple(cls._fields)))
        else:
            # Custom nodes; for a 1.0 target, an OrderedDict and a defaultdict(None) too.
            kinds.append(tree_pb2.NODE_KIND_CUSTOM)
            ref_type((type_name(cls), ()))
            node_data.append(encode_node_data(aux))
        arities.append(len(children))
        stack.extend(reversed(children))

    n = len(strings)
    msg = tree_pb2.TreeDef(
        kinds=kinds,
        arities=arities,
        strings=strings,
        dict_keys=[k if k >= 0 else n + ~k for k in dict_keys] if keys else dict_keys,
        type_refs=type_refs,
        node_data=node_data,
        keys=keys,
    )
    for name, fields in node_types:
        msg.node_types.add(name=name, fields=fields)
    return msg


def _key_message(key: Any, at: str) -> tree_pb2.DictKey:
    """A dict key that is not a str: an int within int64, a bool or None."""
    if key is None:
        return tree_pb2.DictKey(none=True)
    if type(key) is bool:
        return tree_pb2.DictKey(bool=key)
    if type(key) is int:
        if key not in _INT64:
            raise EncodeError(f"dict key {key} does not fit in int64", at)
        return tree_pb2.DictKey(int=key)
    raise EncodeError(
        f"dict key {key!r} of type {type(key).__name__} cannot be encoded:"
        " only str, int, bool and None keys are supported",
        at,
    )


def _factory_name(factory: Any, at: str) -> str:
    """A defaultdict's default_factory by the name that finds it again ("" for None)."""
    if factory is None:
        return ""
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        name = f"{module}.{qualname}"
        if _find_object(name) is factory:
            return name
    raise EncodeError(
        f"the default_factory {factory!r} of a defaultdict has no importable name", at
    )


# ---- checking ---------------------------------------------------------------

_LEAF, _NONE = tree_pb2.NODE_KIND_LEAF, tree_pb2.NODE_KIND_NONE


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
    """A checked tree, still plain data: nodes in preorder. The facts of `check`."""

    nodes: list[Node]
    node_types: list[tuple[str, tuple[str, ...]]]
    num_leaves: int
    # A tree of builtin nodes only lifts to the same PyTreeDef in any process state, so its
    # first lift is kept; a namedtuple or custom class is looked up again at every lift.
    plain: bool = False
    lifted: tree_util.PyTreeDef | None = None


# Checked trees by their bytes and the limits that judged them: a program sends the same
# tree on every call. Bounded: trees past _CACHED_BYTES are not kept, and a full cache is
# emptied (no order to keep, and clear() is safe under threads).
_CHECKED: dict[tuple[bytes, int, int, int], TreeShape] = {}
_CACHED_TREES = 64
_CACHED_BYTES = 1 << 16


def check(msg: tree_pb2.TreeDef, ctx: CheckContext) -> TreeShape:
    """Checks the columns against each other and the limits, node by node in preorder;
    a tree checked before under the same limits is found by its bytes."""
    limits = ctx.limits
    data = msg.SerializeToString(deterministic=True)
    key = (data, limits.max_tree_nodes, limits.max_tree_depth, ctx.minor_version)
    shape = _CHECKED.get(key)
    if shape is None:
        shape = _check_columns(msg, ctx)
        if len(data) <= _CACHED_BYTES:
            if len(_CHECKED) >= _CACHED_TREES:
                _CHECKED.clear()
            _CHECKED[key] = shape
    return shape


def _check_columns(msg: tree_pb2.TreeDef, ctx: CheckContext) -> TreeShape:
    """The checks of `check`, in their order, on a tree not seen before."""
    path, limits = ctx.path, ctx.limits
    kinds = msg.kinds
    n = len(kinds)
    if n > limits.max_tree_nodes:
        raise DecodeError(
            f"{path}.kinds",
            "limit-exceeded",
            f"{n} nodes exceed the limit of {limits.max_tree_nodes}",
        )
    if n == 0:
        raise DecodeError(f"{path}.kinds", "invalid-tree", "a tree has no nodes")
    minor = ctx.minor_version
    arities, dict_keys = msg.arities, msg.dict_keys
    type_refs, node_data, node_types = msg.type_refs, msg.node_data, msg.node_types
    ai = di = ti = ci = 0
    leaves = 0
    nodes: list[Node] = []
    pending: list[int] = []
    for i, kind in enumerate(kinds):
        if i and not pending:
            raise DecodeError(
                f"{path}.kinds[{i}]", "invalid-tree", "nodes follow the end of the tree"
            )
        if pending:
            pending[-1] -= 1
        if kind not in _KNOWN_KINDS:
            raise newer_value(f"{path}.kinds[{i}]", f"node kind {kind}", minor) or DecodeError(
                f"{path}.kinds[{i}]", "unknown-enum", f"unknown node kind {kind}"
            )
        if kind == _LEAF:
            leaves += 1
            nodes.append(_LEAF_NODE)
        elif kind == _NONE:
            nodes.append(_NONE_NODE)
        else:
            since = _KIND_SINCE[kind]
            if since:
                name = tree_pb2.NodeKind.Name(kind).removeprefix("NODE_KIND_").lower()
                require_version(f"{path}.kinds[{i}]", name, since, minor)
            if ai >= len(arities):
                raise DecodeError(
                    f"{path}.arities", "invalid-tree", "fewer arities than containers"
                )
            arity = arities[ai]
            ai += 1
            if arity > n - i - 1:
                raise DecodeError(
                    f"{path}.arities[{ai - 1}]",
                    "invalid-tree",
                    f"node {i} claims {arity} children, only {n - i - 1} nodes follow",
                )
            keys: tuple[Any, ...] = ()
            node_type = -1
            data = b""
            if kind in _DICTS:
                if di + arity > len(dict_keys):
                    raise DecodeError(f"{path}.dict_keys", "invalid-tree", "too few dict keys")
                is_sorted = kind != tree_pb2.NODE_KIND_ORDERED_DICT
                keys = _check_dict_keys(msg, di, arity, is_sorted, path, minor)
                di += arity
            if kind in _TYPED:
                node_type = _type_ref(type_refs, ti, len(node_types), path)
                ti += 1
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
            nodes.append(Node(kind, arity, keys, node_type, data))
            if arity:
                pending.append(arity)
                if len(pending) > limits.max_tree_depth:
                    raise DecodeError(
                        f"{path}.kinds[{i}]",
                        "limit-exceeded",
                        f"tree depth exceeds the limit of {limits.max_tree_depth}",
                    )
        while pending and pending[-1] == 0:
            pending.pop()
    if pending:
        raise DecodeError(f"{path}.kinds", "invalid-tree", "the tree ends before its last node")
    for name, used, have in (
        ("arities", ai, len(arities)),
        ("dict_keys", di, len(dict_keys)),
        ("type_refs", ti, len(type_refs)),
        ("node_data", ci, len(node_data)),
    ):
        if used != have:
            raise DecodeError(
                f"{path}.{name}", "invalid-tree", f"{have} entries where the kinds imply {used}"
            )
    types = [(t.name, tuple(t.fields)) for t in node_types]
    return TreeShape(nodes, types, leaves, plain=ti == 0)


def _check_dict_keys(
    msg: tree_pb2.TreeDef, first: int, arity: int, is_sorted: bool, path: str, minor: int
) -> tuple[Any, ...]:
    """A dict node's keys from the key pool (one that is not a str only from 1.1 on), strictly
    increasing as JAX sorts them when `is_sorted`, else distinct."""
    dict_keys, strings, pool = msg.dict_keys, msg.strings, msg.keys
    n = len(strings)
    ks: list[Any] = []
    seen: set[Any] = set()  # an ordered dict's keys so far; 1 and True are one key
    for j in range(first, first + arity):
        k = dict_keys[j]
        if k < n or not pool:
            if k >= n:
                raise DecodeError(
                    f"{path}.dict_keys[{j}]", "invalid-tree", f"no string {k} in strings"
                )
            key: Any = strings[k]
        else:
            where = f"{path}.dict_keys[{j}]"
            require_version(where, "a dict key that is not a str", _KEYS_SINCE, minor)
            if k - n >= len(pool):
                raise DecodeError(where, "invalid-tree", f"no key {k} in strings and keys")
            key = _key_value(pool[k - n], f"{path}.keys[{k - n}]")
        problem = _order_problem(ks[-1], key) if is_sorted and ks else None
        if not is_sorted:
            problem = f"dict key {key!r} repeats" if key in seen else None
            seen.add(key)
        if problem:
            raise DecodeError(f"{path}.dict_keys[{j}]", "invalid-tree", problem)
        ks.append(key)
    return tuple(ks)


def _order_problem(a: Any, b: Any) -> str | None:
    """Why `a` may not come before `b` among a sorted dict's keys, or None."""
    if type(a) is str and type(b) is str or type(a) in _NUMBERS and type(b) in _NUMBERS:
        return None if a < b else "dict keys are not distinct and sorted"
    return f"dict keys {a!r} and {b!r} cannot be sorted together"


_NUMBERS = (int, bool)


def _key_value(key: tree_pb2.DictKey, path: str) -> Any:
    """A DictKey message's value: one of its cases, and `none` only as true."""
    case = key.WhichOneof("key")
    if case is None:
        raise DecodeError(path, "missing", "a dict key has no value")
    if case == "none":
        if not key.none:
            raise DecodeError(f"{path}.none", "invalid-value", "none is true when set")
        return None
    return getattr(key, case)


def _check_namedtuple_type(t: tree_pb2.NodeType, path: str) -> None:
    if not t.name:
        raise DecodeError(f"{path}.name", "invalid-value", "a namedtuple type has no name")
    fields = list(t.fields)
    for j, f in enumerate(fields):
        if not f.isidentifier() or iskeyword(f) or f.startswith("_") or f in fields[:j]:
            raise DecodeError(f"{path}.fields[{j}]", "invalid-value", f"bad field name {f!r}")


# ---- lifting ----------------------------------------------------------------

_SYNTHESIZED: dict[tuple[str, tuple[str, ...]], type] = {}


def _find_object(name: str, accept: Any = callable) -> Any:
    """The object named "module.QualName" among already-imported modules that `accept`s,
    or None."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj: Any = mod
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None and accept(obj):
            return obj
    return None


def _find_class(name: str) -> type | None:
    """The class named "module.QualName" among already-imported modules."""
    return _find_object(name, lambda obj: isinstance(obj, type))


def _namedtuple_class(name: str, fields: tuple[str, ...]) -> type:
    cls = _find_class(name)
    if cls is not None and _is_namedtuple(cls) and tuple(cls._fields) == fields:
        return cls
    key = (name, fields)
    if key not in _SYNTHESIZED:
        module, _, qualname = name.rpartition(".")
        typename = qualname.rpartition(".")[2]
        if not typename.isidentifier() or iskeyword(typename):
            typename = "namedtuple"
        _SYNTHESIZED[key] = collections.namedtuple(typename, fields, module=module or None)
    return _SYNTHESIZED[key]


def _default_factory(name: str) -> Any:
    """A defaultdict's default_factory by name ("" is None), among imported modules only."""
    if not name:
        return None
    factory = _find_object(name)
    if factory is None:
        raise LiftError(
            f"the default_factory {name} of a defaultdict is not defined in this process"
        )
    return factory


def lift(msg: tree_pb2.TreeDef, ctx: LiftContext) -> tree_util.PyTreeDef:
    """The PyTreeDef of a checked tree, rebuilt bottom-up from its facts; a plain tree
    checked before gives the PyTreeDef it gave then (immutable, as JAX's are)."""
    shape: TreeShape = ctx.facts
    if shape.lifted is not None:
        return shape.lifted
    treedef = _build(shape)
    if shape.plain:
        shape.lifted = treedef
    return treedef


def _build(shape: TreeShape) -> tree_util.PyTreeDef:
    """The PyTreeDef of a checked tree's nodes, rebuilt bottom-up."""
    registry = tree_util.default_registry
    make = tree_util.PyTreeDef.from_node_data_and_children
    classes: dict[int, type] = {}
    leaf = make(registry, None, [])
    none = make(registry, (_NONE_TYPE, None), [])
    stack: list[tree_util.PyTreeDef] = []
    for node in reversed(shape.nodes):
        if node.kind == _LEAF:
            stack.append(leaf)
            continue
        if node.kind == _NONE:
            stack.append(none)
            continue
        children = [stack.pop() for _ in range(node.arity)]
        if node.kind == tree_pb2.NODE_KIND_TUPLE:
            nd = (tuple, None)
        elif node.kind == tree_pb2.NODE_KIND_LIST:
            nd = (list, None)
        elif node.kind == tree_pb2.NODE_KIND_DICT:
            nd = (dict, list(node.keys))
        elif node.kind == tree_pb2.NODE_KIND_ORDERED_DICT:
            nd = (collections.OrderedDict, node.keys)
        elif node.kind == tree_pb2.NODE_KIND_DEFAULT_DICT:
            factory = _default_factory(shape.node_types[node.node_type][0])
            nd = (collections.defaultdict, (factory, node.keys))
        elif node.kind == tree_pb2.NODE_KIND_NAMEDTUPLE:
            if node.node_type not in classes:
                classes[node.node_type] = _namedtuple_class(*shape.node_types[node.node_type])
            nd = (classes[node.node_type], None)
        else:
            name = shape.node_types[node.node_type][0]
            cls = _find_class(name)
            if cls is None:
                raise LiftError(f"pytree node type {name} is not defined in this process")
            try:
                nd = (cls, decode_node_data(node.data))
                stack.append(make(registry, nd, children))
            except (ValueError, TypeError) as e:
                raise LiftError(f"cannot rebuild pytree node {name}: {e}") from e
            continue
        stack.append(make(registry, nd, children))
    assert len(stack) == 1
    return stack[0]
