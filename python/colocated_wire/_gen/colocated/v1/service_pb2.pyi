from colocated_wire._gen.colocated.v1 import limit_pb2 as _limit_pb2
from colocated_wire._gen.colocated.v1 import payload_pb2 as _payload_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VersionRange(_message.Message):
    __slots__ = ("min_version", "max_version")
    MIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSION_FIELD_NUMBER: _ClassVar[int]
    min_version: int
    max_version: int
    def __init__(self, min_version: _Optional[int] = ..., max_version: _Optional[int] = ...) -> None: ...

class GetVersionRequest(_message.Message):
    __slots__ = ("client",)
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    client: VersionRange
    def __init__(self, client: _Optional[_Union[VersionRange, _Mapping]] = ...) -> None: ...

class GetVersionResponse(_message.Message):
    __slots__ = ("server", "version")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    server: VersionRange
    version: int
    def __init__(self, server: _Optional[_Union[VersionRange, _Mapping]] = ..., version: _Optional[int] = ...) -> None: ...

class ArrayData(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("version", "program", "inputs")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    version: int
    program: _payload_pb2.ProgramPayload
    inputs: _containers.RepeatedCompositeFieldContainer[ArrayData]
    def __init__(self, version: _Optional[int] = ..., program: _Optional[_Union[_payload_pb2.ProgramPayload, _Mapping]] = ..., inputs: _Optional[_Iterable[_Union[ArrayData, _Mapping]]] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("output_specs", "outputs")
    OUTPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    output_specs: _payload_pb2.SpecsPayload
    outputs: _containers.RepeatedCompositeFieldContainer[ArrayData]
    def __init__(self, output_specs: _Optional[_Union[_payload_pb2.SpecsPayload, _Mapping]] = ..., outputs: _Optional[_Iterable[_Union[ArrayData, _Mapping]]] = ...) -> None: ...
