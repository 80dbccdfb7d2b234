"""Writing a PyTreeDef's columns: every node for a 1.0 target (as 1.0 wrote them), and from
1.1 on shortened (tree_repeats.py: REPEAT and LEAVES), with the str key pool front-coded
(tree_keys.py) and fresh dict keys. src/entries/tree-write.ts is the same.

Lowering walks the PyTreeDef with `node_data()` / `children()` once per distinct tree: the
lowered nodes are cached by the PyTreeDef's value, and the written message by the leaves'
table references, as a program sends the same specs on every call.

colocated.v1.1 adds dict keys that are not str (int, bool, None: a pool of typed keys after
the str keys), OrderedDict nodes (keys in insertion order) and defaultdict nodes (keys
sorted; the default_factory by qualified name, None as an empty name). For a 1.0 target an
OrderedDict, and a defaultdict whose factory is None, are written as the custom nodes 1.0
wrote for them; the rest is an EncodeError naming 1.1.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import Any

from jax import tree_util

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.entries import tree_keys, tree_repeats
from colocated_wire.entries.tree_nodes import (
    encode_node_data,
    find_object,
    is_namedtuple,
    type_name,
)
from colocated_wire.entries.tree_repeats import LoweredNode
from colocated_wire.errors import EncodeError
from colocated_wire.schema_version import enum_since, field_since, refuse_newer
from colocated_wire.version import SCHEMA_MINOR_VERSION

_NONE_TYPE = type(None)
_KIND_SINCE = enum_since(tree_pb2.NodeKind.DESCRIPTOR)
_KEYS_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "keys")
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
    if found is not None and (
        found.text is None or found.source is treedef or found.text == str(treedef)
    ):
        return found
    nodes, reusable = _walk(treedef, target, path)
    lowered = Lowered(target, nodes, str_keys=reusable)
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
                _check_keys(keys, target, f"{path}.kinds[{len(nodes)}]")
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
            node_type = (_factory_name(factory, at), ())
            node = (tree_pb2.NODE_KIND_DEFAULT_DICT, arity, keys, node_type, None)
        else:
            known = classes.get(cls)
            if known is None:
                if is_namedtuple(cls) and aux is None:
                    known = (tree_pb2.NODE_KIND_NAMEDTUPLE, (type_name(cls), tuple(cls._fields)))
                else:
                    # Custom nodes; for a 1.0 target, an OrderedDict and a defaultdict(None) too.
                    known = (tree_pb2.NODE_KIND_CUSTOM, (type_name(cls), ()))
                classes[cls] = known
            kind, node_type = known
            data = None
            if kind == tree_pb2.NODE_KIND_CUSTOM:
                memo = (type(aux), repr(aux))
                found = datas.get(memo)
                if found is None:
                    found = datas[memo] = (encode_node_data(aux), _plain_aux(aux))
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


def _keys(node_keys: Any, target: int, at: str) -> tuple[Any, ...]:
    """A dict node's keys, each one this target can write."""
    keys = tuple(node_keys)
    _check_keys(keys, target, at)
    return keys


def _check_keys(keys: tuple[Any, ...], target: int, at: str) -> None:
    for k in keys:
        if type(k) is not str:
            refuse_newer(at, f"dict key {k!r}", _KEYS_SINCE, target)
            _key_message(k, at)


def _message(nodes: Sequence[LoweredNode], target: int) -> tree_pb2.TreeDef:
    """The columns of written nodes; pools in first-use order."""
    kinds: list[int] = []
    arities: list[int] = []
    strings: dict[str, int] = {}
    others: dict[tuple[type, Any], int] = {}
    dict_keys: list[int] = []
    node_types: dict[tuple[str, tuple[str, ...]], int] = {}
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
                dict_keys.append(~others.setdefault((type(k), k), len(others)))
        if node_type is not None:
            type_refs.append(node_types.setdefault(node_type, len(node_types)))
        if data is not None:
            node_data.append(data)
    n = len(strings)
    if others:
        dict_keys = [k if k >= 0 else n + ~k for k in dict_keys]
    msg = tree_pb2.TreeDef(
        kinds=kinds,
        arities=arities,
        type_refs=type_refs,
        node_data=node_data,
        keys=[_key_message(k, "") for _, k in others],
    )
    if target >= 1:
        msg.key_text, sizes = tree_keys.front_code(list(strings))
        msg.key_sizes.extend(sizes)
        if dict_keys and dict_keys == list(range(len(dict_keys))):
            msg.fresh_dict_keys = True
        else:
            msg.dict_keys.extend(dict_keys)
    else:
        msg.strings.extend(strings)
        msg.dict_keys.extend(dict_keys)
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
        if find_object(name) is factory:
            return name
    raise EncodeError(
        f"the default_factory {factory!r} of a defaultdict has no importable name", at
    )
