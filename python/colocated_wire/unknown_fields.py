"""Unknown fields: what a newer minor version added and this schema does not name.

The protobuf runtime keeps them on each parsed message, in arrival order, and
writes them after the known fields. These helpers find them and carry them
from a decoded message onto a freshly lowered one, message by message, so
nothing a newer peer wrote is lost.
"""

from __future__ import annotations

import struct

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet


def graft_unknown_fields(src: Message, dst: Message, skip: frozenset[str] = frozenset()) -> None:
    """Copies the unknown fields of `src` and its sub-messages onto the matching ones of `dst`.

    Sub-messages match by field, list position and oneof case; fields named in `skip` (full
    names) are left out. A message of `dst` that has unknown fields already (an entry or
    function kept as its bytes) is left as it is.
    """
    fields = UnknownFieldSet(src)
    if len(fields) and not len(UnknownFieldSet(dst)):
        dst.MergeFromString(_encode(fields))
    for fd, value in src.ListFields():
        if fd.message_type is None or fd.full_name in skip:
            continue
        if fd.is_repeated:
            for a, b in zip(value, getattr(dst, fd.name), strict=False):
                graft_unknown_fields(a, b, skip)
        elif dst.HasField(fd.name):
            graft_unknown_fields(value, getattr(dst, fd.name), skip)


def _encode(fields: UnknownFieldSet) -> bytes:
    out = bytearray()
    for f in fields:
        out += _varint(f.field_number << 3 | f.wire_type)
        if f.wire_type == 0:
            out += _varint(f.data)
        elif f.wire_type == 1:
            out += struct.pack("<Q", f.data)
        elif f.wire_type == 2:
            out += _varint(len(f.data)) + f.data
        elif f.wire_type == 3:
            out += _encode(f.data) + _varint(f.field_number << 3 | 4)
        else:
            out += struct.pack("<I", f.data)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
