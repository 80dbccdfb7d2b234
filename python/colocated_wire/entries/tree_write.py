"""Writing a PyTreeDef's columns: every node for a 1.0 target (as 1.0 wrote them), and from
1.1 on shortened (tree_repeats.py: REPEAT and LEAVES), with the str key pool front-coded
(tree_keys.py) and fresh dict keys. src/entries/tree-write.ts is the same.

Lowering walks the PyTreeDef with `node_data()` / `children()` once per distinct tree: the
lowered nodes are cached by the PyTreeDef's value, and the written message by the leaves'
table references, as a program sends the same specs on every call.

colocated.v1.1 adds dict keys that are not str (int, bool, None, float, bytes and tuples of
keys: a pool of typed keys after the str keys, a tuple's items before it), OrderedDict nodes
(keys in insertion order) and defaultdict nodes (keys sorted; the default_factory by
qualified name, None as an empty name). Where pickles are allowed (tree_nodes.py), any other
key JAX accepts (an enum member, a str subclass, a NaN, an int past int64) travels pickled,
and so does a default_factory without an importable name. For a 1.0 target an OrderedDict,
and a defaultdict whose factory is None, are written as the custom nodes 1.0 wrote for
them; the rest is an EncodeError naming 1.1.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from jax import tree_util

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.entries import tree_keys, tree_repeats
from colocated_wire.entries.tree_nodes import (
    encode_node_data,
    find_object,
    is_namedtuple,
    is_pickled_node_data,
    pickle_value,
    pickles_allowed,
    type_name,
)
from colocated_wire.entries.tree_repeats import LoweredNode
from colocated_wire.errors import EncodeError
from colocated_wire.schema_version import enum_since, field_since, refuse_newer
from colocated_wire.version import SCHEMA_MINOR_VERSION

_NONE_TYPE = type(None)
_KIND_SINCE = enum_since(tree_pb2.NodeKind.DESCRIPTOR)
_KEYS_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "keys")
_TYPE_PICKLE_SINCE = field_since(tree_pb2.NodeType.DESCRIPTOR, "pickle")
_INT64 = range(-(2**63), 2**63)
_LEAF, _NONE = tree_pb2.NODE_KIND_LEAF, tree_pb2.NODE_KIND_NONE
_LEAVES, _REPEAT = tree_pb2.NODE_KIND_LEAVES, tree_pb2.NODE_KIND_REPEAT
_LEAF_LOWERED: LoweredNode = (_LEAF, 0, (), None, None)
_NONE_LOWERED: LoweredNode = (_NONE, 0, (), None, None)


@dataclasses.dataclass(slots=True, eq=False)
class Lowered:
    """A PyTreeDef lowered for a reader of one minor version: its nodes in preorder, before
    any node is shortened (what `write` makes of them depends on the leaves' references)."""

    target: int
    nodes: list[LoweredNode]
    # Written messages by leaf references (a program sends the same specs on every call).
    written: dict[tuple[int, ...], tuple[tree_pb2.TreeDef, list[int]]] = dataclasses.field(
        default_factory=dict
    )
    shape: tree_repeats.Structure | None = None
    str_keys: bool = False  # every dict key a str (and custom node data plain)
    # For a tree with keys or node data of other types: the tree it was lowered from and its
    # text, which tells apart trees JAX finds equal ({1: x}, {True: x}) but the wire does not.
    source: tree_util.PyTreeDef | None = None
    text: str | None = None
    pickled: bool = False  # holds pickles: found again only where pickles are allowed


# Lowered trees by PyTreeDef (by value: equal trees from fresh flattens find one entry) and
# target. Bounded like _CHECKED: a full cache is emptied, past 64 trees or 2**20 nodes.
_LOWERED: dict[tuple[tree_util.PyTreeDef, int], Lowered] = {}
_CACHED_LOWERED = 64
_CACHED_NODES = 1 << 20
_cached_nodes = 0
_CACHED_WRITES = 8


def lower(
    treedef: tree_util.PyTreeDef,
    target: int = SCHEMA_MINOR_VERSION,
    path: str = "treedef",
) -> Lowered:
    """A PyTreeDef's nodes for a reader of minor version `target`; what that reader cannot
    read is an EncodeError at the node (`path`.kinds[i]). A tree lowered before is found by
    value; one whose keys or node data are not all str (1 == True in Python) only when it is
    the same object or prints the same."""
    key = (treedef, target)
    try:
        found = _LOWERED.get(key)
    except TypeError:  # custom node data that cannot be hashed
        found = key = None
    if (
        found is not None
        and (found.text is None or found.source is treedef or found.text == str(treedef))
        and (not found.pickled or pickles_allowed())
    ):
        return found
    nodes, reusable = _walk(treedef, target, path)
    lowered = Lowered(target, nodes, str_keys=reusable)
    lowered.pickled = any(_has_pickle(node) for node in nodes) if not reusable else False
    if not reusable:
        lowered.source, lowered.text = treedef, str(treedef)
    if key is not None and len(nodes) <= _CACHED_NODES:
        global _cached_nodes
        if len(_LOWERED) >= _CACHED_LOWERED or _cached_nodes + len(nodes) > _CACHED_NODES:
            _LOWERED.clear()
            _cached_nodes = 0
        _LOWERED[key] = lowered
        _cached_nodes += len(nodes)
    return lowered


def write(lowered: Lowered, leaves: Sequence[int]) -> tuple[tree_pb2.TreeDef, Sequence[int]]:
    """The TreeDef message of a lowered tree whose leaves are the table entries `leaves`, and
    the leaf references to write with it: at a 1.1 target, REPEAT and LEAVES leave out the
    leaves they stand for."""
    refs = tuple(leaves)
    found = lowered.written.get(refs)
    if found is not None:
        return found
    if lowered.target < 1:
        result = (_message(lowered.nodes, lowered.target), refs)
    else:
        if lowered.shape is None:
            lowered.shape = tree_repeats.structure(lowered.nodes, lowered.str_keys)
        nodes, written = tree_repeats.compact(lowered.nodes, lowered.shape, refs)
        result = (_message(nodes, lowered.target), written)
    if len(lowered.written) >= _CACHED_WRITES:
        lowered.written.clear()
    lowered.written[refs] = result
    return result


def _walk(treedef: tree_util.PyTreeDef, target: int, path: str) -> tuple[list[LoweredNode], bool]:
    """The lowered nodes of a PyTreeDef in preorder, and whether every PyTreeDef equal to it
    lowers alike (str keys only, custom node data of str and None only)."""
    nodes: list[LoweredNode] = []
    reusable = True
    # A model repeats its classes and node data (every layer's): each is lowered once.
    classes: dict[type, tuple[int, Any]] = {}
    datas: dict[tuple[type, str], tuple[bytes, bool]] = {}
    stack = [treedef]
    while stack:
        t = stack.pop()
        nd = t.node_data()
        if nd is None:
            nodes.append(_LEAF_LOWERED)
            continue
        cls, aux = nd
        if cls is _NONE_TYPE:
            nodes.append(_NONE_LOWERED)
            continue
        children = t.children()
        arity = len(children)
        if cls is tuple:
            node = (tree_pb2.NODE_KIND_TUPLE, arity, (), None, None)
        elif cls is list:
            node = (tree_pb2.NODE_KIND_LIST, arity, (), None, None)
        elif cls is dict:
            keys = tuple(aux)
            if not all(type(k) is str for k in keys):
                reusable = False
                keys = _keys(keys, target, f"{path}.kinds[{len(nodes)}]")
            node = (tree_pb2.NODE_KIND_DICT, arity, keys, None, None)
        elif cls is collections.OrderedDict and target >= 1:
            keys = _keys(aux, target, f"{path}.kinds[{len(nodes)}]")
            reusable = reusable and all(type(k) is str for k in keys)
            node = (tree_pb2.NODE_KIND_ORDERED_DICT, arity, keys, None, None)
        elif cls is collections.defaultdict and (target >= 1 or aux[0] is not None):
            at = f"{path}.kinds[{len(nodes)}]"
            factory, node_keys = aux
            what = f"a defaultdict with default_factory {factory!r}"
            refuse_newer(at, what, _KIND_SINCE[tree_pb2.NODE_KIND_DEFAULT_DICT], target)
            keys = _keys(node_keys, target, at)
            reusable = reusable and all(type(k) is str for k in keys)
            node_type = _factory_type(factory, at)
            reusable = reusable and not node_type[2]
            node = (tree_pb2.NODE_KIND_DEFAULT_DICT, arity, keys, node_type, None)
        else:
            known = classes.get(cls)
            if known is None:
                if is_namedtuple(cls) and aux is None:
                    name = (type_name(cls), tuple(cls._fields), b"")
                    known = (tree_pb2.NODE_KIND_NAMEDTUPLE, name)
                else:
                    # Custom nodes; for a 1.0 target, an OrderedDict and a defaultdict(None) too.
                    at = f"{path}.kinds[{len(nodes)}]"
                    known = (tree_pb2.NODE_KIND_CUSTOM, _custom_type(cls, target, at))
                classes[cls] = known
            kind, node_type = known
            reusable = reusable and not node_type[2]
            data = None
            if kind == tree_pb2.NODE_KIND_CUSTOM:
                memo = (type(aux), repr(aux))
                found = datas.get(memo)
                if found is None:
                    at = f"{path}.kinds[{len(nodes)}]"
                    try:
                        encoded = encode_node_data(aux)
                    except EncodeError as e:
                        raise EncodeError(e.detail, at) from e
                    if is_pickled_node_data(encoded):
                        refuse_newer(at, f"pickled custom pytree node data {aux!r}", 1, target)
                    found = datas[memo] = (encoded, _plain_aux(aux))
                data = found[0]
                reusable = reusable and found[1]
            node = (kind, arity, (), node_type, data)
        nodes.append(node)
        stack.extend(reversed(children))
    return nodes, reusable


def _plain_aux(aux: Any) -> bool:
    """Node data that no unequal value equals (1 == True, but "1" is only "1")."""
    if aux is None or type(aux) is str:
        return True
    return type(aux) is tuple and all(_plain_aux(a) for a in aux)


def _has_pickle(node: LoweredNode) -> bool:
    _, _, keys, node_type, data = node
    return (
        any(type(k) is not str and _key_has_pickle(k) for k in keys)
        or (node_type is not None and bool(node_type[2]))
        or (data is not None and is_pickled_node_data(data))
    )


def _key_has_pickle(wire: tuple) -> bool:
    if wire[0] == "t":
        return any(type(k) is not str and _key_has_pickle(k) for k in wire[1])
    return wire[0] == "p"


def _keys(node_keys: Any, target: int, at: str) -> tuple[Any, ...]:
    """A dict node's keys as written (tree_repeats.LoweredNode), each one this target can
    write: a str as itself, any other key as its wire form (`_wire_key`)."""
    keys = tuple(node_keys)
    if all(type(k) is str for k in keys):
        return keys
    return tuple(k if type(k) is str else _wire_key(k, target, at) for k in keys)


def _wire_key(key: Any, target: int, at: str) -> Any:
    """A key that is not a str as the typed value the pool interns (1, True and 1.0 are one
    Python key, three wire keys): ("i", int), ("b", bool), ("n",), ("f", float.hex(), float),
    ("y", bytes), ("t", items) or ("p", pickle)."""
    refuse_newer(at, f"dict key {key!r}", _KEYS_SINCE, target)
    t = type(key)
    if key is None:
        return ("n",)
    if t is bool:
        return ("b", key)
    if t is int and key in _INT64:
        return ("i", key)
    if t is float and not math.isnan(key):
        return ("f", key.hex(), key)
    if t is bytes:
        return ("y", key)
    if t is tuple:
        return ("t", tuple(k if type(k) is str else _wire_key(k, target, at) for k in key))
    why = (
        f"dict key {key} does not fit in int64"
        if t is int
        else f"dict key {key!r} of type {t.__name__} has no wire form (str, int, bool, None,"
        " float but NaN, bytes and tuples of them have)"
    )
    try:
        return ("p", pickle_value(key, f"dict key {key!r}", why))
    except EncodeError as e:
        raise EncodeError(e.detail, at) from e


def _message(nodes: Sequence[LoweredNode], target: int) -> tree_pb2.TreeDef:
    """The columns of written nodes; pools in first-use order."""
    kinds: list[int] = []
    arities: list[int] = []
    strings: dict[str, int] = {}
    others: dict[Any, int] = {}
    key_msgs: list[Any] = []  # DictKey messages; a tuple's item refs until they are final
    dict_keys: list[int] = []
    node_types: dict[tuple[str, tuple[str, ...], bytes], int] = {}
    type_refs: list[int] = []
    node_data: list[bytes] = []
    for kind, arity, keys, node_type, data in nodes:
        kinds.append(kind)
        if kind == _LEAF or kind == _NONE:
            continue
        arities.append(arity)
        for k in keys:
            # A key that is not a str is written as ~(its index in `keys`) until `strings`
            # is whole.
            if type(k) is str:
                dict_keys.append(strings.setdefault(k, len(strings)))
            else:
                dict_keys.append(_intern_key(k, strings, others, key_msgs))
        if node_type is not None:
            type_refs.append(node_types.setdefault(node_type, len(node_types)))
        if data is not None:
            node_data.append(data)
    n = len(strings)
    if others:
        dict_keys = [k if k >= 0 else n + ~k for k in dict_keys]
        for j, m in enumerate(key_msgs):
            if type(m) is list:
                items = [k if k >= 0 else n + ~k for k in m]
                key_msgs[j] = tree_pb2.DictKey(tuple=tree_pb2.KeyTuple(items=items))
    msg = tree_pb2.TreeDef(
        kinds=kinds,
        arities=arities,
        type_refs=type_refs,
        node_data=node_data,
        keys=key_msgs,
    )
    if target >= 1:
        if strings:
            tree_keys.write_key_pool(msg, list(strings), target)
        # Fresh only when the dicts use the whole pool (a tuple's items may be only its items).
        if dict_keys and dict_keys == list(range(n + len(key_msgs))):
            msg.fresh_dict_keys = True
        else:
            msg.dict_keys.extend(dict_keys)
    else:
        msg.strings.extend(strings)
        msg.dict_keys.extend(dict_keys)
    for name, fields, pickled in node_types:
        msg.node_types.add(name=name, fields=fields, pickle=pickled)
    return msg


def _intern_key(
    wire: tuple, strings: dict[str, int], others: dict[Any, int], msgs: list[Any]
) -> int:
    """The pool ref of a wire key (~index while `strings` grows), its items interned first
    in order, so that they come before it."""
    found = others.get(wire)
    if found is not None:
        return ~found
    tag = wire[0]
    if tag == "t":
        items = [
            strings.setdefault(k, len(strings))
            if type(k) is str
            else _intern_key(k, strings, others, msgs)
            for k in wire[1]
        ]
        m: Any = items  # its refs are final once `strings` is whole (_message)
    elif tag == "n":
        m = tree_pb2.DictKey(none=True)
    elif tag == "b":
        m = tree_pb2.DictKey(bool=wire[1])
    elif tag == "i":
        m = tree_pb2.DictKey(int=wire[1])
    elif tag == "f":
        m = tree_pb2.DictKey(float=wire[2])
    elif tag == "y":
        m = tree_pb2.DictKey(bytes=wire[1])
    else:
        m = tree_pb2.DictKey(pickle=wire[1])
    others[wire] = len(msgs)
    msgs.append(m)
    return ~others[wire]


def _custom_type(cls: type, target: int, at: str) -> tuple[str, tuple[str, ...], bytes]:
    """A custom node's class as a node type: by name, and from 1.1 on, where pickles are allowed
    and the name does not find it again (a class defined in a function), pickled too."""
    name = type_name(cls)
    if target < _TYPE_PICKLE_SINCE or not pickles_allowed():
        return (name, (), b"")  # by name, as 1.0 wrote it (a reader lacking it refuses it)
    if find_object(name, lambda obj: isinstance(obj, type)) is cls:
        return (name, (), b"")
    try:
        return (name, (), pickle_value(cls, f"pytree node type {name}", ""))
    except EncodeError as e:
        raise EncodeError(e.detail, at) from e


def _factory_type(factory: Any, at: str) -> tuple[str, tuple[str, ...], bytes]:
    """A defaultdict's default_factory as a node type: by the name that finds it again (""
    for None), or pickled where pickles are allowed."""
    if factory is None:
        return ("", (), b"")
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        name = f"{module}.{qualname}"
        if find_object(name) is factory:
            return (name, (), b"")
    what = f"the default_factory {factory!r} of a defaultdict"
    try:
        return ("", (), pickle_value(factory, what, f"{what} has no importable name"))
    except EncodeError as e:
        raise EncodeError(e.detail, at) from e
