from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class Limit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_UNSPECIFIED: _ClassVar[Limit]
    LIMIT_MAX_PAYLOAD_BYTES: _ClassVar[Limit]
    LIMIT_MAX_TABLE_ENTRIES: _ClassVar[Limit]
    LIMIT_MAX_DEVICES_PER_LIST: _ClassVar[Limit]
    LIMIT_MAX_RANK: _ClassVar[Limit]
    LIMIT_MAX_TREE_NODES: _ClassVar[Limit]
    LIMIT_MAX_TREE_DEPTH: _ClassVar[Limit]
    LIMIT_MAX_UNKNOWN_FIELDS: _ClassVar[Limit]
LIMIT_UNSPECIFIED: Limit
LIMIT_MAX_PAYLOAD_BYTES: Limit
LIMIT_MAX_TABLE_ENTRIES: Limit
LIMIT_MAX_DEVICES_PER_LIST: Limit
LIMIT_MAX_RANK: Limit
LIMIT_MAX_TREE_NODES: Limit
LIMIT_MAX_TREE_DEPTH: Limit
LIMIT_MAX_UNKNOWN_FIELDS: Limit
DEFAULT_MAX_FIELD_NUMBER: _ClassVar[int]
default_max: _descriptor.FieldDescriptor
LIMIT_FIELD_NUMBER: _ClassVar[int]
limit: _descriptor.FieldDescriptor
