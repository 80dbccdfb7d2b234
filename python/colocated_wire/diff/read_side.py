"""One payload as the diff reads it: parsed and checked as decoding checks it (specs checked
before are not checked again, as deserialize_specs does not check them again), then read from
its checked messages and their facts, never lifted: lifting needs this process to have the
payload's devices (and its classes), and a diff is asked where neither may be.
TypeScript (src/diff/read-side.ts) compares the model it lifts to, which needs neither; both
reach the same values: a tree of plain nodes, each leaf by its table entry.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import numpy as np
from google.protobuf.message import Message

from colocated_wire._gen.colocated.v1 import payload_pb2, tree_pb2
from colocated_wire.decode import checked_specs
from colocated_wire.entries import treedef
from colocated_wire.entries.device_list import DEVICE_LIST
from colocated_wire.entries.tree_nodes import Pickled
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DEFAULT_LIMITS
from colocated_wire.payload import function, specs, value, writer
from colocated_wire.payload.header import parse_payload, payload_kind
from colocated_wire.payload.writer import Writer
from colocated_wire.schema_version import require_version
from colocated_wire.table.check_table import CheckContext, check_table
from colocated_wire.table.references import References


class TreeNode:
    """A node of a tree as TypeScript's model holds it (src/model/tree.ts): its kind ("leaf",
    "none", "tuple", "list", "dict", "ordered_dict", "default_dict", "namedtuple", "custom"),
    children, a dict's keys, a typed node's type, a custom node's data."""

    __slots__ = (
        "kind",
        "children",
        "keys",
        "type_name",
        "fields",
        "node_data",
        "type_pickle",
        "default_factory",
    )

    def __init__(self, kind: str, children: list[TreeNode] | tuple = (), keys: tuple = ()):
        self.kind = kind
        self.children = children
        self.keys = keys
        self.type_name = ""
        self.fields: tuple[str, ...] = ()
        self.node_data = b""
        self.type_pickle: bytes | None = None
        self.default_factory: str | Pickled | None = None


# Every tree shares its leaves and Nones: they hold nothing.
LEAF = TreeNode("leaf")
NONE = TreeNode("none")

_KINDS = {
    tree_pb2.NODE_KIND_TUPLE: "tuple",
    tree_pb2.NODE_KIND_LIST: "list",
    tree_pb2.NODE_KIND_DICT: "dict",
    tree_pb2.NODE_KIND_ORDERED_DICT: "ordered_dict",
    tree_pb2.NODE_KIND_DEFAULT_DICT: "default_dict",
    tree_pb2.NODE_KIND_NAMEDTUPLE: "namedtuple",
    tree_pb2.NODE_KIND_CUSTOM: "custom",
}


@dataclasses.dataclass(slots=True)
class PartSide:
    """One tree of a payload: "specs", a program's "input" and "output", or "value"."""

    name: str
    root: TreeNode
    # Each leaf's table entry, in leaf order; in a value, a leaf that is no table entry is
    # -2 - its position among the leaves written (DiffSide.values).
    leaf_refs: np.ndarray


@dataclasses.dataclass(slots=True)
class DiffSide:
    """A payload, checked: its table (messages, kinds and facts) and its parts."""

    kind: str
    bytes: int
    minor_version: int
    refs: References
    parts: list[PartSide]
    # A value's leaves that are no table entries, by their position among those written.
    values: dict[int, payload_pb2.ValueLeaf] = dataclasses.field(default_factory=dict)
    function: payload_pb2.Function | None = None  # a program's
    devices: int | None = None  # a program's device list entry
    writer: Writer | None = None  # who wrote it, when its header says (1.3)


_NAMES = {
    payload_pb2.PAYLOAD_KIND_SPECS: "specs",
    payload_pb2.PAYLOAD_KIND_PROGRAM: "program",
    payload_pb2.PAYLOAD_KIND_VALUE: "value",
}


def read_side(data: bytes) -> DiffSide:
    """Parses and checks a payload for the diff; raises DecodeError as decoding does."""
    kind = _NAMES.get(payload_kind(data, DEFAULT_LIMITS), "specs")  # else specs says why
    read = {"specs": _read_specs, "program": _read_program}.get(kind, _read_value)
    return read(data)


def _read_specs(data: bytes) -> DiffSide:
    """Specs, checked as deserialize_specs checks them (bytes checked before, not again); their
    part read once per checked payload."""
    checked, _ = checked_specs(data)
    msg, refs = checked.msg, checked.refs
    part = _SPECS_PARTS.get(refs)
    if part is None:
        part = _SPECS_PARTS[refs] = _specs_part("specs", msg.specs, checked.shape)
    minor = msg.header.minor_version
    return DiffSide("specs", len(data), minor, refs, [part], writer=_writer(msg))


# The part of a specs payload, by its checked table: read once while the decode cache keeps the
# payload's checks (they are immutable), and let go with them.
_SPECS_PARTS: weakref.WeakKeyDictionary[References, PartSide] = weakref.WeakKeyDictionary()


def _read_program(data: bytes) -> DiffSide:
    """A program's parts, checked in field order as decoding checks them."""
    kind = payload_pb2.PAYLOAD_KIND_PROGRAM
    msg, minor, refs, at = _checked(data, payload_pb2.ProgramPayload, kind)
    if not msg.HasField("devices"):
        raise DecodeError("devices", "missing", "a program needs its devices")
    refs.check(msg.devices, "devices", DEVICE_LIST)
    function.check(msg.function, at("function"))
    parts = []
    for name, field in (("input", "input_specs"), ("output", "output_specs")):
        part = _part(msg, field)
        if part is None and name == "output":
            continue
        parts.append(_specs_part(name, part, specs.check(part, at(field))))
    side = DiffSide("program", len(data), minor, refs, parts, writer=_writer(msg))
    side.function, side.devices = msg.function, msg.devices
    return side


def _read_value(data: bytes) -> DiffSide:
    """A value's tree and leaves: an entry by its index, any other leaf by -2 - its position."""
    kind = payload_pb2.PAYLOAD_KIND_VALUE
    msg, minor, refs, at = _checked(data, payload_pb2.ValuePayload, kind)
    require_version("header.kind", "a value payload", value.VALUE_SINCE, minor)
    shape = value.check(_part(msg, "value"), at("value"))
    leaves = msg.value.leaves
    is_entry = [leaf.WhichOneof("leaf") == "entry" for leaf in leaves]
    written = [leaf.entry if is_entry[i] else -2 - i for i, leaf in enumerate(leaves)]
    leaf_refs = np.asarray(treedef.leaf_refs(shape, written), np.int64)
    part = PartSide("value", tree_of(shape), leaf_refs)
    side = DiffSide("value", len(data), minor, refs, [part], writer=_writer(msg))
    side.values = {i: leaf for i, leaf in enumerate(leaves) if not is_entry[i]}
    return side


def _specs_part(name: str, msg: payload_pb2.Specs, shape: treedef.TreeShape) -> PartSide:
    """A tree of array specs: its nodes, and its leaves' entries."""
    return PartSide(name, tree_of(shape), _specs_leaf_refs(msg, shape))


def _specs_leaf_refs(msg: payload_pb2.Specs, shape: treedef.TreeShape) -> np.ndarray:
    """Each leaf's ArraySpec entry, in leaf order (leaf copies and REPEATs made), as a column:
    the one place the diff reads a Specs message's leaves."""
    return np.asarray(specs.leaf_refs(msg, shape), np.int64)


def _writer(msg: Any) -> Writer | None:
    """Who wrote the payload, when its header says (1.3)."""
    return writer.lift(msg.header.writer) if msg.header.HasField("writer") else None


def _checked(data: bytes, cls: type[Message], kind: int) -> tuple[Any, int, References, Any]:
    """The parsed payload, its minor version, its checked table, and the context of a part."""
    limits = DEFAULT_LIMITS
    msg, _ = parse_payload(data, cls, kind, limits)
    minor = msg.header.minor_version
    refs = check_table(msg.table if msg.HasField("table") else None, limits, minor)

    def at(path: str) -> CheckContext:
        return CheckContext(refs.table_size, path, refs, limits, minor)

    return msg, minor, refs, at


def _part(msg: Message, field: str) -> Message | None:
    """A message field, or None when it is absent."""
    return getattr(msg, field) if msg.HasField(field) else None


def tree_of(shape: treedef.TreeShape) -> TreeNode:
    """The tree of a checked TreeDef's written nodes, each container made when its last child
    is (as entries/treedef.py builds a PyTreeDef); a REPEAT is the very node its source became."""
    nodes = shape.nodes
    built: list[Any] = [None] * len(nodes)
    stack: list[list[Any]] = []  # open containers: [awaited children, index, children so far]
    for i, node in enumerate(nodes):
        kind = node.kind
        if kind == tree_pb2.NODE_KIND_LEAF:
            new = [LEAF]
        elif kind == tree_pb2.NODE_KIND_NONE:
            new = [NONE]
        elif kind == tree_pb2.NODE_KIND_LEAVES:
            new = [LEAF] * node.arity
        elif kind == tree_pb2.NODE_KIND_REPEAT:
            new = [built[node.arity]]
        elif node.arity:
            stack.append([node.arity, i, []])
            continue
        else:
            new = [_container(shape, node, [])]
        built[i] = new[0]
        while stack:
            top = stack[-1]
            top[2] += new
            top[0] -= len(new)
            if top[0]:
                break
            stack.pop()
            j = top[1]
            built[j] = _container(shape, nodes[j], top[2])
            new = [built[j]]
    return built[0]


def _container(shape: treedef.TreeShape, node: Any, children: list[TreeNode]) -> TreeNode:
    kind = _KINDS[node.kind]
    out = TreeNode(kind, children, tuple(node.keys))
    if node.node_type >= 0:
        name, fields, pickle = shape.node_types[node.node_type]
        if kind == "default_dict":
            out.default_factory = Pickled(pickle) if pickle else (name or None)
        else:
            out.type_name, out.fields = name, tuple(fields)
            out.type_pickle = pickle or None
    out.node_data = node.data
    return out
