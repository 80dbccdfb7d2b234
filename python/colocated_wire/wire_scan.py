"""The wire scan: payload bytes checked against the schema before any message is built.

A payload of a few megabytes can hold millions of empty messages or packed
values, and parsing builds all of them before any limit is looked at. The
scan walks the bytes first and refuses, with `limit-exceeded`, a repeated
field whose count passes its limit (table entries, tree nodes, device ids,
ranks) and more unknown fields than allowed. It is also the one judge of the
wire format, the same in both languages (src/wire-scan.ts): a field
number of 0, a stray end-group, a length past its message, a cut varint, or
a singular field given twice is `malformed`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits

_MAX_GROUP_DEPTH = 32
_HIGH_BYTES = bytes(range(0x80, 0x100))

# The limit on each repeated field's count in one message, by "Message.field".
LIMITS = {
    "Specs.leaves": "max_tree_nodes",
    "PickledFunction.refs": "max_table_entries",
    "SharedObjectTable.entries": "max_table_entries",
    "Iota.reshape_dims": "max_rank",
    "Iota.transpose_perm": "max_rank",
    "PlainDeviceIds.ids": "max_devices_per_list",
    "DeltaDeviceIds.deltas": "max_devices_per_list",
    "Mesh.axis_sizes": "max_rank",
    "Mesh.axis_names": "max_rank",
    "Mesh.axis_types": "max_rank",
    "PartitionSpecEntry.axes": "max_rank",
    "PartitionSpec.entries": "max_rank",
    "PartitionSpec.unreduced": "max_rank",
    "PartitionSpec.reduced": "max_rank",
    "TileAssignment.dims": "max_rank",
    "LogicalDeviceIds.ids": "max_devices_per_list",
    "GspmdSharding.last_tile_dims": "max_rank",
    "ArraySpec.shape": "max_rank",
    "TreeDef.kinds": "max_tree_nodes",
    "TreeDef.arities": "max_tree_nodes",
    "TreeDef.strings": "max_tree_nodes",
    "TreeDef.dict_keys": "max_tree_nodes",
    "TreeDef.node_types": "max_tree_nodes",
    "TreeDef.type_refs": "max_tree_nodes",
    "TreeDef.node_data": "max_tree_nodes",
    "NodeType.fields": "max_tree_nodes",
}


class _Field(NamedTuple):
    name: str
    message: Descriptor | None  # the type of a message field
    varint: bool  # a varint scalar, else length-delimited
    limit: str | None  # the limit of a repeated field
    items: bool  # elements of a repeated message field are named `name[i]`


@functools.cache
def _fields(desc: Descriptor) -> dict[int, _Field]:
    out = {}
    for fd in desc.fields:
        limit = LIMITS[f"{desc.name}.{fd.name}"] if fd.is_repeated else None
        varint = fd.type not in (fd.TYPE_MESSAGE, fd.TYPE_STRING, fd.TYPE_BYTES)
        message = fd.message_type if fd.type == FieldDescriptor.TYPE_MESSAGE else None
        items = limit is not None and desc.name != "SharedObjectTable"
        out[fd.number] = _Field(fd.name, message, varint, limit, items)
    return out


def check_wire(data: bytes, root: Descriptor, limits: DecodeLimits) -> int:
    """The number of unknown fields in `data`; DecodeError if it is not a well-formed `root`
    within the limits."""
    scan = _Scan(data, limits)
    scan.message(root, 0, len(data), None)
    return scan.unknown


def _malformed(detail: str) -> DecodeError:
    return DecodeError("payload", "malformed", f"not a valid protobuf message ({detail})")


# A path is built only for an error: (parent, name, index) links, None at the payload.
def _path(link) -> str:
    parts = []
    while link is not None:
        link, name, index = link
        parts.append(name if index is None else f"{name}[{index}]")
    return ".".join(reversed(parts)).replace(".[", "[")


class _Scan:
    def __init__(self, data: bytes, limits: DecodeLimits):
        self.data = data
        self.limits = limits
        self.unknown = 0

    def message(self, desc: Descriptor, pos: int, end: int, path) -> None:
        """Scans one message from `pos` to `end`."""
        fields = _fields(desc)
        singular = 0  # a bit per singular field seen
        counts: dict[int, int] = {}  # per repeated field
        data = self.data
        while pos < end:
            tag = data[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = self.varint(pos, end, 5)
            number, wire_type = tag >> 3, tag & 7
            field = fields.get(number)
            if field is None or not _fits(field, wire_type):
                if number == 0:
                    raise _malformed("a field number is 0")
                pos = self.skip_unknown(number, wire_type, pos, end, path, 0)
                continue
            if field.limit is None:
                if singular >> number & 1:
                    raise _malformed(f"{_path((path, field.name, None))} appears twice")
                singular |= 1 << number
                seen = 0
            else:
                seen = counts.get(number, 0)
            if wire_type == 0:
                if pos < end and data[pos] < 0x80:
                    pos += 1
                else:
                    pos = self.varint(pos, end, 10)[1]
                if field.limit is not None:
                    counts[number] = self.count(field, path, seen + 1)
                continue
            length = data[pos] if pos < end else 0x80
            if length < 0x80:
                pos += 1
            else:
                length, pos = self.varint(pos, end, 10)
            if length > end - pos:
                raise _malformed("a length runs past the end of its message")
            stop = pos + length
            if field.limit is not None:
                values = 1
                if field.varint:  # packed
                    if length and data[stop - 1] >= 0x80:
                        raise _malformed("a packed varint is cut off")
                    values = length
                    if length > self.limit(field):  # count them only when it can matter
                        values = len(data[pos:stop].translate(None, _HIGH_BYTES))
                counts[number] = self.count(field, path, seen + values)
            if field.message is not None:
                if field.limit is None:
                    item = (path, field.name, None)
                elif field.items:
                    item = (path, field.name, seen)
                else:  # table entries are table[i]
                    item = (path, "", seen)
                self.message(field.message, pos, stop, item)
            pos = stop
        if pos != end:
            raise _malformed("a field runs past the end of its message")

    def limit(self, field: _Field) -> int:
        return getattr(self.limits, field.limit)

    def count(self, field: _Field, path, count: int) -> int:
        if count > getattr(self.limits, field.limit):
            at = _path((path, field.name, None))
            raise DecodeError(at, "limit-exceeded", f"more than {self.limit(field)} values")
        return count

    def skip_unknown(self, number, wire_type, pos, end, path, depth) -> int:
        if depth == 0:
            self.unknown += 1
            if self.unknown > self.limits.max_unknown_fields:
                detail = f"more than {self.limits.max_unknown_fields} unknown fields"
                raise DecodeError(_path(path) or "payload", "limit-exceeded", detail)
        if wire_type == 0:
            return self.varint(pos, end, 10)[1]
        if wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if width > end - pos:
                raise _malformed("a fixed-width value is cut off")
            return pos + width
        if wire_type == 2:
            length, pos = self.varint(pos, end, 10)
            if length > end - pos:
                raise _malformed("a length runs past the end of its message")
            return pos + length
        if wire_type == 3:
            if depth >= _MAX_GROUP_DEPTH:
                raise _malformed("groups nest too deep")
            while True:
                tag, pos = self.varint(pos, end, 5)
                if tag & 7 == 4:
                    if tag >> 3 != number:
                        raise _malformed("a group ends with another field's tag")
                    return pos
                if tag >> 3 == 0:
                    raise _malformed("a field number is 0")
                pos = self.skip_unknown(tag >> 3, tag & 7, pos, end, path, depth + 1)
        raise _malformed(f"wire type {wire_type} where no group is open")

    def varint(self, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
        """(value, next position) of a varint of at most `max_bytes` bytes within `end`."""
        data = self.data
        value = 0
        for i in range(max_bytes):
            if pos >= end:
                raise _malformed("a varint is cut off")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                if max_bytes == 5 and value > 0xFFFFFFFF:
                    raise _malformed("a tag passes 32 bits")
                return value, pos
        raise _malformed("a varint is too long")


def _fits(field: _Field, wire_type: int) -> bool:
    """Whether a known field is read with this wire type; otherwise it is unknown."""
    if field.varint:
        return wire_type == 0 or (wire_type == 2 and field.limit is not None)
    return wire_type == 2
