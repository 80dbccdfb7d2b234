"""The wire scan: payload bytes checked against the schema before any message is built.

A payload of a few megabytes can hold millions of empty messages or packed
values, and parsing builds all of them before any limit is looked at. The
scan walks the bytes first and refuses, with `limit-exceeded`, a repeated
field whose count passes the limit its `(limit)` option names in
proto/colocated/v1 (table entries, tree nodes, device ids, ranks), and more
unknown fields than allowed. It is also the one judge of the wire format, the
same in both languages (src/wire-scan.ts): a field number of 0, a stray
end-group, a length past its message, a cut varint, or a singular field given
twice is `malformed`.

Bombs are runs of one record written over and over, so a run of byte-identical
records of one repeated or unknown field is scanned once and counted at once:
its length is found by comparing ever longer slices, at the speed of memcmp.
A nested message that scanned clean once (a table, a tree, an entry, sent on
every call) is found again by its bytes instead of walked again.
"""

from __future__ import annotations

import dataclasses

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from colocated_wire._gen.colocated.v1 import limit_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DecodeLimits, limit_name

_MAX_GROUP_DEPTH = 32
_HIGH_BYTES = bytes(range(0x80, 0x100))
_SLICE = 1 << 20
_UNKNOWN_FIELDS = limit_name(
    limit_pb2.Limit.DESCRIPTOR.values_by_number[limit_pb2.LIMIT_MAX_UNKNOWN_FIELDS]
)
_TABLE = "colocated.v1.SharedObjectTable"  # whose entries are table[i], not entries[i]

# How a known tag's value is read: its wire type, or _PACKED for packed numbers.
_VARINT, _FIXED64, _DELIMITED, _FIXED32, _PACKED = 0, 1, 2, 5, 8
_FIXED = {
    FieldDescriptor.TYPE_DOUBLE: _FIXED64,
    FieldDescriptor.TYPE_FIXED64: _FIXED64,
    FieldDescriptor.TYPE_SFIXED64: _FIXED64,
    FieldDescriptor.TYPE_FLOAT: _FIXED32,
    FieldDescriptor.TYPE_FIXED32: _FIXED32,
    FieldDescriptor.TYPE_SFIXED32: _FIXED32,
}
_WIDTH = {_VARINT: 0, _FIXED64: 8, _FIXED32: 4}


# What the scan knows of a field, read once from its descriptor, as a plain tuple
# (unpacked at once in the scan's inner loop):
#   name: the field's name
#   read: how its value is read, a wire type or _PACKED
#   width: for _PACKED, bytes per value, 0 for varints
#   limit: for a repeated field, the DecodeLimits field of its limit, else None
#   message: for a message field, its type's plan, else None
#   bit: for a singular field, its bit in the mask of fields seen
#   item: elements of a repeated message field are `item[i]`
_Field = tuple[str, int, int, "str | None", "dict | None", int, str]
_PLANS: dict[Descriptor, dict[int, _Field]] = {}


def _plan(desc: Descriptor) -> dict[int, _Field]:
    """The fields of `desc`, and of every message it holds, by the tags they are read under."""
    plan = _PLANS.get(desc)
    if plan is not None:
        return plan
    plan = _PLANS[desc] = {}  # before its fields, for recursive types
    singular = 0
    for fd in desc.fields:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            raise TypeError(f"{fd.full_name}: the scan reads no maps")
        message = _plan(fd.message_type) if fd.type == fd.TYPE_MESSAGE else None
        delimited = message is not None or fd.type in (fd.TYPE_STRING, fd.TYPE_BYTES)
        read = _DELIMITED if delimited else _FIXED.get(fd.type, _VARINT)
        limit, bit = None, 0
        if fd.is_repeated:
            option = fd.GetOptions().Extensions[limit_pb2.limit]
            if option == limit_pb2.LIMIT_UNSPECIFIED:
                raise TypeError(f"{fd.full_name} is repeated but has no (limit)")
            limit = limit_name(limit_pb2.Limit.DESCRIPTOR.values_by_number[option])
        else:
            bit, singular = 1 << singular, singular + 1
        item = "" if desc.full_name == _TABLE else fd.name
        plan[fd.number << 3 | read] = (fd.name, read, 0, limit, message, bit, item)
        if limit is not None and not delimited:  # numbers may come packed
            width = _WIDTH[read]
            plan[fd.number << 3 | _DELIMITED] = (fd.name, _PACKED, width, limit, None, 0, item)
    return plan


def scan_wire(data: bytes, root: Descriptor, limits: DecodeLimits) -> int:
    """The number of unknown fields in `data`; DecodeError if it is not a well-formed `root`
    within the limits."""
    scan = _Scan(bytes(data), limits)
    scan.message(_plan(root), 0, len(data), None)
    return scan.unknown


# Nested messages of at most _CLEAN_BYTES bytes that scanned clean (no unknown field inside),
# by their plan's id and bytes: a program sends the same table and tree on every call, and a
# scan is a function of the bytes, the plan and the limits. Bounded by the bytes held: past
# _CLEAN_BUDGET the set is emptied.
_CLEAN_BYTES = 1 << 16
_CLEAN_BUDGET = 1 << 20  # per DecodeLimits, of which _JUDGED keeps at most 16


@dataclasses.dataclass(slots=True)
class _Judged:
    """What a scan needs of its DecodeLimits: the limits by name, the clean messages and the
    bytes they hold."""

    limit: dict[str, int]
    clean: set[tuple[int, bytes]]
    held: int = 0


# Per DecodeLimits (frozen, so hashable): a payload is scanned twice, and reading the
# fields costs more than scanning a small payload's header.
_JUDGED: dict[DecodeLimits, _Judged] = {}
_LAST: list[tuple[DecodeLimits | None, _Judged | None]] = [(None, None)]


def _judged(limits: DecodeLimits) -> _Judged:
    last = _LAST[0]
    if last[0] is limits:  # hashing DecodeLimits hashes every field: the usual one is kept
        return last[1]
    judged = _judged_by_value(limits)
    _LAST[0] = (limits, judged)
    return judged


def _judged_by_value(limits: DecodeLimits) -> _Judged:
    judged = _JUDGED.get(limits)
    if judged is None:
        if len(_JUDGED) >= 16:  # a program uses few limits; a full cache is emptied
            _JUDGED.clear()
        by_name = {f.name: getattr(limits, f.name) for f in dataclasses.fields(limits)}
        judged = _JUDGED[limits] = _Judged(by_name, set())
    return judged


def _malformed(detail: str) -> DecodeError:
    return DecodeError("payload", "malformed", f"not a valid protobuf message ({detail})")


# A path is built only for an error: (parent, name, index) links, None at the payload.
def _path(link) -> str:
    parts = []
    while link is not None:
        link, name, index = link
        parts.append(name if index is None else f"{name}[{index}]")
    return ".".join(reversed(parts)).replace(".[", "[")


def _copies(data: bytes, view: memoryview, start: int, stop: int, end: int) -> int:
    """How many copies of data[start:stop] follow it back to back before `end`."""
    size = stop - start
    total = 1  # copies known from `start`: doubled while the next as many match, then topped up
    while data.startswith(view[start : start + total * size], start + total * size, end):
        total *= 2
    step = total // 2
    while step:
        if data.startswith(view[start : start + step * size], start + total * size, end):
            total += step
        step //= 2
    return total - 1


class _Scan:
    def __init__(self, data: bytes, limits: DecodeLimits):
        self.data = data
        self.view = memoryview(data)
        self.limits = limits
        self.unknown = 0
        self.judged = judged = _judged(limits)
        self.limit, self.clean = judged.limit, judged.clean
        self.max_unknown = self.limit[_UNKNOWN_FIELDS]

    def message(self, plan: dict[int, _Field], pos: int, end: int, path) -> None:
        """Scans one message from `pos` to `end`."""
        data = self.data
        singular = 0  # a bit per singular field seen
        counts = None  # per repeated field
        while pos < end:
            start = pos
            tag = data[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = self.varint(pos, end, 5)
            field = plan.get(tag)
            if field is None:
                pos = self.unknown_field(tag, start, pos, end, path)
                continue
            name, read, width, limit, message, bit, item = field
            if read == _VARINT:
                if pos < end and data[pos] < 0x80:
                    pos += 1
                else:
                    pos = self.varint(pos, end, 10)[1]
                stop = pos
            elif read == _FIXED64 or read == _FIXED32:
                stop = pos + (8 if read == _FIXED64 else 4)
                if stop > end:
                    raise _malformed("a fixed-width value is cut off")
            else:
                length = data[pos] if pos < end else 0x80
                if length < 0x80:
                    pos += 1
                else:
                    length, pos = self.varint(pos, end, 10)
                if length > end - pos:
                    raise _malformed("a length runs past the end of its message")
                stop = pos + length
            if limit is None:
                if singular & bit:
                    raise _malformed(f"{_path((path, name, None))} appears twice")
                singular |= bit
                if message is not None and stop > pos:  # an empty message holds nothing
                    self.nested(message, pos, stop, (path, name, None))
                pos = stop
                continue
            if counts is None:
                counts = {}
            seen = counts.get(name, 0)
            items = self.packed(width, pos, stop) if read == _PACKED else 1
            count = seen + items
            if count > self.limit[limit]:
                raise self.too_many(name, limit, path)
            unknown = self.unknown
            if message is not None and stop > pos:
                self.nested(message, pos, stop, (path, item, seen))
            pos = stop
            # Byte-identical records that follow, with nothing unknown inside, are counted at once.
            after = 2 * pos - start
            if (
                after <= end
                and data[after - 1] == data[pos - 1]  # cheap, and rarely equal unless a copy
                and self.unknown == unknown
                and self.repeats(start, pos, end)
            ):
                copies = _copies(data, self.view, start, pos, end)
                count += items * copies
                if count > self.limit[limit]:
                    raise self.too_many(name, limit, path)
                pos += copies * (pos - start)
            counts[name] = count

    def nested(self, plan: dict[int, _Field], pos: int, end: int, path) -> None:
        """Scans a nested message, unless it scanned clean before."""
        size = end - pos
        if size > _CLEAN_BYTES:
            self.message(plan, pos, end, path)
            return
        key = (id(plan), self.data[pos:end])  # plans live as long as the process
        if key in self.clean:
            return
        unknown = self.unknown
        self.message(plan, pos, end, path)
        if self.unknown == unknown:
            judged = self.judged
            if judged.held + size > _CLEAN_BUDGET:
                judged.clean.clear()  # the same set as self.clean
                judged.held = 0
            judged.clean.add(key)
            judged.held += size

    def repeats(self, start: int, stop: int, end: int) -> bool:
        """Whether data[start:stop] comes again right after it; its last byte is looked at first."""
        data = self.data
        after = 2 * stop - start
        return (
            after <= end
            and data[after - 1] == data[stop - 1]
            and data.startswith(self.view[start:stop], stop, end)
        )

    def packed(self, width: int, pos: int, stop: int) -> int:
        """The number of values packed from `pos` to `stop`, each `width` bytes or a varint."""
        length = stop - pos
        if width:
            if length % width:
                raise _malformed("a packed value is cut off")
            return length // width
        data = self.data
        if length and data[stop - 1] >= 0x80:
            raise _malformed("a packed varint is cut off")
        # Each varint ends in a byte below 0x80; counted a slice at a time, to copy little.
        if length <= _SLICE:
            return len(data[pos:stop].translate(None, _HIGH_BYTES))
        return sum(
            len(data[at : min(at + _SLICE, stop)].translate(None, _HIGH_BYTES))
            for at in range(pos, stop, _SLICE)
        )

    def too_many(self, name: str, limit: str, path) -> DecodeError:
        detail = f"more than {self.limit[limit]} values ({limit})"
        return DecodeError(_path((path, name, None)), "limit-exceeded", detail)

    def unknown_field(self, tag: int, start: int, pos: int, end: int, path) -> int:
        """Skips an unknown field, and the byte-identical ones that follow; counts them."""
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise _malformed("a field number is 0")
        if wire_type > 5:
            raise _malformed(f"wire type {wire_type}")
        self.count_unknown(1, path)
        if wire_type == 0 and pos < end and self.data[pos] < 0x80:
            pos += 1  # the most common unknown field: a small number
        else:
            pos = self.skip(number, wire_type, pos, end, 0)
        if self.repeats(start, pos, end):
            copies = _copies(self.data, self.view, start, pos, end)
            self.count_unknown(copies, path)
            pos += copies * (pos - start)
        return pos

    def count_unknown(self, count: int, path) -> None:
        self.unknown += count
        if self.unknown > self.max_unknown:
            detail = f"more than {self.max_unknown} unknown fields ({_UNKNOWN_FIELDS})"
            raise DecodeError(_path(path) or "payload", "limit-exceeded", detail)

    def skip(self, number: int, wire_type: int, pos: int, end: int, depth: int) -> int:
        """Where the field after this one begins; its groups may nest _MAX_GROUP_DEPTH deep."""
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
                inner, inner_type = tag >> 3, tag & 7
                if inner == 0:
                    raise _malformed("a field number is 0")
                if inner_type > 5:
                    raise _malformed(f"wire type {inner_type}")
                if inner_type == 4:
                    if inner != number:
                        raise _malformed("a group ends with another field's tag")
                    return pos
                pos = self.skip(inner, inner_type, pos, end, depth + 1)
        raise _malformed("an end-group where no group is open")

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
