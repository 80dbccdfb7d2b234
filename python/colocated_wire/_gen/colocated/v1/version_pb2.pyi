from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
SINCE_FIELD_NUMBER: _ClassVar[int]
since: _descriptor.FieldDescriptor
FIELD_SINCE_FIELD_NUMBER: _ClassVar[int]
field_since: _descriptor.FieldDescriptor
