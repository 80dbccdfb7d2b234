from colocated_wire._gen.colocated.v1 import limit_pb2 as _limit_pb2
from colocated_wire._gen.colocated.v1 import payload_pb2 as _payload_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProgramHandle(_message.Message):
    __slots__ = ("digest",)
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    digest: bytes
    def __init__(self, digest: _Optional[bytes] = ...) -> None: ...

class LoadProgramRequest(_message.Message):
    __slots__ = ("version", "program")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    version: int
    program: _payload_pb2.ProgramPayload
    def __init__(self, version: _Optional[int] = ..., program: _Optional[_Union[_payload_pb2.ProgramPayload, _Mapping]] = ...) -> None: ...

class LoadProgramResponse(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: ProgramHandle
    def __init__(self, handle: _Optional[_Union[ProgramHandle, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("server", "version", "limits", "sessions", "relays", "runtime")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    RELAYS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    server: VersionRange
    version: int
    limits: WorkerLimits
    sessions: bool
    relays: bool
    runtime: WorkerRuntime
    def __init__(self, server: _Optional[_Union[VersionRange, _Mapping]] = ..., version: _Optional[int] = ..., limits: _Optional[_Union[WorkerLimits, _Mapping]] = ..., sessions: _Optional[bool] = ..., relays: _Optional[bool] = ..., runtime: _Optional[_Union[WorkerRuntime, _Mapping]] = ...) -> None: ...

class WorkerRuntime(_message.Message):
    __slots__ = ("colocated_wire", "python", "jax", "jaxlib", "numpy", "cloudpickle", "platform", "device_kind")
    COLOCATED_WIRE_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    JAX_FIELD_NUMBER: _ClassVar[int]
    JAXLIB_FIELD_NUMBER: _ClassVar[int]
    NUMPY_FIELD_NUMBER: _ClassVar[int]
    CLOUDPICKLE_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_FIELD_NUMBER: _ClassVar[int]
    DEVICE_KIND_FIELD_NUMBER: _ClassVar[int]
    colocated_wire: str
    python: str
    jax: str
    jaxlib: str
    numpy: str
    cloudpickle: str
    platform: str
    device_kind: str
    def __init__(self, colocated_wire: _Optional[str] = ..., python: _Optional[str] = ..., jax: _Optional[str] = ..., jaxlib: _Optional[str] = ..., numpy: _Optional[str] = ..., cloudpickle: _Optional[str] = ..., platform: _Optional[str] = ..., device_kind: _Optional[str] = ...) -> None: ...

class WorkerLimits(_message.Message):
    __slots__ = ("max_concurrent_calls", "max_inflight_bytes")
    MAX_CONCURRENT_CALLS_FIELD_NUMBER: _ClassVar[int]
    MAX_INFLIGHT_BYTES_FIELD_NUMBER: _ClassVar[int]
    max_concurrent_calls: int
    max_inflight_bytes: int
    def __init__(self, max_concurrent_calls: _Optional[int] = ..., max_inflight_bytes: _Optional[int] = ...) -> None: ...

class ArrayData(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("version", "program", "inputs", "handle")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    version: int
    program: _payload_pb2.ProgramPayload
    inputs: _containers.RepeatedCompositeFieldContainer[ArrayData]
    handle: ProgramHandle
    def __init__(self, version: _Optional[int] = ..., program: _Optional[_Union[_payload_pb2.ProgramPayload, _Mapping]] = ..., inputs: _Optional[_Iterable[_Union[ArrayData, _Mapping]]] = ..., handle: _Optional[_Union[ProgramHandle, _Mapping]] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("output_specs", "outputs")
    OUTPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    output_specs: _payload_pb2.SpecsPayload
    outputs: _containers.RepeatedCompositeFieldContainer[ArrayData]
    def __init__(self, output_specs: _Optional[_Union[_payload_pb2.SpecsPayload, _Mapping]] = ..., outputs: _Optional[_Iterable[_Union[ArrayData, _Mapping]]] = ...) -> None: ...

class ShardIndex(_message.Message):
    __slots__ = ("start", "stop")
    START_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    start: _containers.RepeatedScalarFieldContainer[int]
    stop: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, start: _Optional[_Iterable[int]] = ..., stop: _Optional[_Iterable[int]] = ...) -> None: ...

class ShardChunk(_message.Message):
    __slots__ = ("leaf", "index", "offset", "data", "last")
    LEAF_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    leaf: int
    index: ShardIndex
    offset: int
    data: bytes
    last: bool
    def __init__(self, leaf: _Optional[int] = ..., index: _Optional[_Union[ShardIndex, _Mapping]] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...

class ExecuteStart(_message.Message):
    __slots__ = ("version", "program", "handle")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROGRAM_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    version: int
    program: _payload_pb2.ProgramPayload
    handle: ProgramHandle
    def __init__(self, version: _Optional[int] = ..., program: _Optional[_Union[_payload_pb2.ProgramPayload, _Mapping]] = ..., handle: _Optional[_Union[ProgramHandle, _Mapping]] = ...) -> None: ...

class ExecuteShardedRequest(_message.Message):
    __slots__ = ("start", "chunk", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: ExecuteStart
    chunk: ShardChunk
    end: bool
    def __init__(self, start: _Optional[_Union[ExecuteStart, _Mapping]] = ..., chunk: _Optional[_Union[ShardChunk, _Mapping]] = ..., end: _Optional[bool] = ...) -> None: ...

class ExecuteShardedResponse(_message.Message):
    __slots__ = ("output_specs", "chunk", "end")
    OUTPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    output_specs: _payload_pb2.SpecsPayload
    chunk: ShardChunk
    end: bool
    def __init__(self, output_specs: _Optional[_Union[_payload_pb2.SpecsPayload, _Mapping]] = ..., chunk: _Optional[_Union[ShardChunk, _Mapping]] = ..., end: _Optional[bool] = ...) -> None: ...

class SessionCall(_message.Message):
    __slots__ = ("id", "start", "inputs", "timeout_ms", "job_call_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    JOB_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    start: ExecuteStart
    inputs: _containers.RepeatedCompositeFieldContainer[ShardChunk]
    timeout_ms: int
    job_call_id: str
    def __init__(self, id: _Optional[int] = ..., start: _Optional[_Union[ExecuteStart, _Mapping]] = ..., inputs: _Optional[_Iterable[_Union[ShardChunk, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., job_call_id: _Optional[str] = ...) -> None: ...

class SessionRequest(_message.Message):
    __slots__ = ("call", "cancel")
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    call: SessionCall
    cancel: int
    def __init__(self, call: _Optional[_Union[SessionCall, _Mapping]] = ..., cancel: _Optional[int] = ...) -> None: ...

class CallStatus(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ("id", "output_specs", "outputs", "end", "status", "output_specs_as_before")
    ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPECS_AS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    id: int
    output_specs: _payload_pb2.SpecsPayload
    outputs: _containers.RepeatedCompositeFieldContainer[ShardChunk]
    end: bool
    status: CallStatus
    output_specs_as_before: bool
    def __init__(self, id: _Optional[int] = ..., output_specs: _Optional[_Union[_payload_pb2.SpecsPayload, _Mapping]] = ..., outputs: _Optional[_Iterable[_Union[ShardChunk, _Mapping]]] = ..., end: _Optional[bool] = ..., status: _Optional[_Union[CallStatus, _Mapping]] = ..., output_specs_as_before: _Optional[bool] = ...) -> None: ...

class RelayChild(_message.Message):
    __slots__ = ("child", "target")
    CHILD_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    child: int
    target: str
    def __init__(self, child: _Optional[int] = ..., target: _Optional[str] = ...) -> None: ...

class RelayedMessage(_message.Message):
    __slots__ = ("child", "session", "message")
    CHILD_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    child: int
    session: int
    message: bytes
    def __init__(self, child: _Optional[int] = ..., session: _Optional[int] = ..., message: _Optional[bytes] = ...) -> None: ...

class RelayRequest(_message.Message):
    __slots__ = ("children", "messages")
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[RelayChild]
    messages: _containers.RepeatedCompositeFieldContainer[RelayedMessage]
    def __init__(self, children: _Optional[_Iterable[_Union[RelayChild, _Mapping]]] = ..., messages: _Optional[_Iterable[_Union[RelayedMessage, _Mapping]]] = ...) -> None: ...

class RelayedEnd(_message.Message):
    __slots__ = ("child", "session", "status")
    CHILD_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    child: int
    session: int
    status: CallStatus
    def __init__(self, child: _Optional[int] = ..., session: _Optional[int] = ..., status: _Optional[_Union[CallStatus, _Mapping]] = ...) -> None: ...

class RelayedTaken(_message.Message):
    __slots__ = ("child", "session")
    CHILD_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    child: int
    session: int
    def __init__(self, child: _Optional[int] = ..., session: _Optional[int] = ...) -> None: ...

class RelayResponse(_message.Message):
    __slots__ = ("messages", "ends", "taken")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ENDS_FIELD_NUMBER: _ClassVar[int]
    TAKEN_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[RelayedMessage]
    ends: _containers.RepeatedCompositeFieldContainer[RelayedEnd]
    taken: _containers.RepeatedCompositeFieldContainer[RelayedTaken]
    def __init__(self, messages: _Optional[_Iterable[_Union[RelayedMessage, _Mapping]]] = ..., ends: _Optional[_Iterable[_Union[RelayedEnd, _Mapping]]] = ..., taken: _Optional[_Iterable[_Union[RelayedTaken, _Mapping]]] = ...) -> None: ...

class GetTopologyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TopologyDevice(_message.Message):
    __slots__ = ("id", "process_index", "platform", "kind", "coords", "core_on_chip")
    ID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_INDEX_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COORDS_FIELD_NUMBER: _ClassVar[int]
    CORE_ON_CHIP_FIELD_NUMBER: _ClassVar[int]
    id: int
    process_index: int
    platform: str
    kind: str
    coords: _containers.RepeatedScalarFieldContainer[int]
    core_on_chip: int
    def __init__(self, id: _Optional[int] = ..., process_index: _Optional[int] = ..., platform: _Optional[str] = ..., kind: _Optional[str] = ..., coords: _Optional[_Iterable[int]] = ..., core_on_chip: _Optional[int] = ...) -> None: ...

class GetTopologyResponse(_message.Message):
    __slots__ = ("process_count", "process_index", "devices")
    PROCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
    PROCESS_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    process_count: int
    process_index: int
    devices: _containers.RepeatedCompositeFieldContainer[TopologyDevice]
    def __init__(self, process_count: _Optional[int] = ..., process_index: _Optional[int] = ..., devices: _Optional[_Iterable[_Union[TopologyDevice, _Mapping]]] = ...) -> None: ...
