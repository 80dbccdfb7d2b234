from colocated_wire._gen.colocated.v1 import limit_pb2 as _limit_pb2
from colocated_wire._gen.colocated.v1 import version_pb2 as _version_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AxisType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AXIS_TYPE_UNSPECIFIED: _ClassVar[AxisType]
    AXIS_TYPE_AUTO: _ClassVar[AxisType]
    AXIS_TYPE_EXPLICIT: _ClassVar[AxisType]
    AXIS_TYPE_MANUAL: _ClassVar[AxisType]

class PartitionSpecEntryKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITION_SPEC_ENTRY_KIND_UNSPECIFIED: _ClassVar[PartitionSpecEntryKind]
    PARTITION_SPEC_ENTRY_KIND_NONE: _ClassVar[PartitionSpecEntryKind]
    PARTITION_SPEC_ENTRY_KIND_AXIS: _ClassVar[PartitionSpecEntryKind]
    PARTITION_SPEC_ENTRY_KIND_TUPLE: _ClassVar[PartitionSpecEntryKind]
    PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED: _ClassVar[PartitionSpecEntryKind]

class ShardingType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHARDING_TYPE_UNSPECIFIED: _ClassVar[ShardingType]
    SHARDING_TYPE_REPLICATED: _ClassVar[ShardingType]
    SHARDING_TYPE_MAXIMAL: _ClassVar[ShardingType]
    SHARDING_TYPE_OTHER: _ClassVar[ShardingType]
    SHARDING_TYPE_MANUAL: _ClassVar[ShardingType]

class DType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    D_TYPE_UNSPECIFIED: _ClassVar[DType]
    D_TYPE_BOOL: _ClassVar[DType]
    D_TYPE_INT2: _ClassVar[DType]
    D_TYPE_INT4: _ClassVar[DType]
    D_TYPE_INT8: _ClassVar[DType]
    D_TYPE_INT16: _ClassVar[DType]
    D_TYPE_INT32: _ClassVar[DType]
    D_TYPE_INT64: _ClassVar[DType]
    D_TYPE_UINT2: _ClassVar[DType]
    D_TYPE_UINT4: _ClassVar[DType]
    D_TYPE_UINT8: _ClassVar[DType]
    D_TYPE_UINT16: _ClassVar[DType]
    D_TYPE_UINT32: _ClassVar[DType]
    D_TYPE_UINT64: _ClassVar[DType]
    D_TYPE_FLOAT16: _ClassVar[DType]
    D_TYPE_FLOAT32: _ClassVar[DType]
    D_TYPE_FLOAT64: _ClassVar[DType]
    D_TYPE_BFLOAT16: _ClassVar[DType]
    D_TYPE_COMPLEX64: _ClassVar[DType]
    D_TYPE_COMPLEX128: _ClassVar[DType]
    D_TYPE_FLOAT8_E3M4: _ClassVar[DType]
    D_TYPE_FLOAT8_E4M3: _ClassVar[DType]
    D_TYPE_FLOAT8_E4M3FN: _ClassVar[DType]
    D_TYPE_FLOAT8_E4M3FNUZ: _ClassVar[DType]
    D_TYPE_FLOAT8_E4M3B11FNUZ: _ClassVar[DType]
    D_TYPE_FLOAT8_E5M2: _ClassVar[DType]
    D_TYPE_FLOAT8_E5M2FNUZ: _ClassVar[DType]
    D_TYPE_FLOAT8_E8M0FNU: _ClassVar[DType]
    D_TYPE_FLOAT4_E2M1FN: _ClassVar[DType]
    D_TYPE_STRING: _ClassVar[DType]
    D_TYPE_FLOAT0: _ClassVar[DType]
    D_TYPE_INT1: _ClassVar[DType]
    D_TYPE_UINT1: _ClassVar[DType]
    D_TYPE_FLOAT6_E2M3FN: _ClassVar[DType]
    D_TYPE_FLOAT6_E3M2FN: _ClassVar[DType]
    D_TYPE_FLOAT8_E5M3FNU: _ClassVar[DType]
    D_TYPE_KEY: _ClassVar[DType]
AXIS_TYPE_UNSPECIFIED: AxisType
AXIS_TYPE_AUTO: AxisType
AXIS_TYPE_EXPLICIT: AxisType
AXIS_TYPE_MANUAL: AxisType
PARTITION_SPEC_ENTRY_KIND_UNSPECIFIED: PartitionSpecEntryKind
PARTITION_SPEC_ENTRY_KIND_NONE: PartitionSpecEntryKind
PARTITION_SPEC_ENTRY_KIND_AXIS: PartitionSpecEntryKind
PARTITION_SPEC_ENTRY_KIND_TUPLE: PartitionSpecEntryKind
PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED: PartitionSpecEntryKind
SHARDING_TYPE_UNSPECIFIED: ShardingType
SHARDING_TYPE_REPLICATED: ShardingType
SHARDING_TYPE_MAXIMAL: ShardingType
SHARDING_TYPE_OTHER: ShardingType
SHARDING_TYPE_MANUAL: ShardingType
D_TYPE_UNSPECIFIED: DType
D_TYPE_BOOL: DType
D_TYPE_INT2: DType
D_TYPE_INT4: DType
D_TYPE_INT8: DType
D_TYPE_INT16: DType
D_TYPE_INT32: DType
D_TYPE_INT64: DType
D_TYPE_UINT2: DType
D_TYPE_UINT4: DType
D_TYPE_UINT8: DType
D_TYPE_UINT16: DType
D_TYPE_UINT32: DType
D_TYPE_UINT64: DType
D_TYPE_FLOAT16: DType
D_TYPE_FLOAT32: DType
D_TYPE_FLOAT64: DType
D_TYPE_BFLOAT16: DType
D_TYPE_COMPLEX64: DType
D_TYPE_COMPLEX128: DType
D_TYPE_FLOAT8_E3M4: DType
D_TYPE_FLOAT8_E4M3: DType
D_TYPE_FLOAT8_E4M3FN: DType
D_TYPE_FLOAT8_E4M3FNUZ: DType
D_TYPE_FLOAT8_E4M3B11FNUZ: DType
D_TYPE_FLOAT8_E5M2: DType
D_TYPE_FLOAT8_E5M2FNUZ: DType
D_TYPE_FLOAT8_E8M0FNU: DType
D_TYPE_FLOAT4_E2M1FN: DType
D_TYPE_STRING: DType
D_TYPE_FLOAT0: DType
D_TYPE_INT1: DType
D_TYPE_UINT1: DType
D_TYPE_FLOAT6_E2M3FN: DType
D_TYPE_FLOAT6_E3M2FN: DType
D_TYPE_FLOAT8_E5M3FNU: DType
D_TYPE_KEY: DType

class SharedObjectTable(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    def __init__(self, entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("device_list", "mesh", "named_sharding", "single_device_sharding", "gspmd_sharding", "array_spec")
    DEVICE_LIST_FIELD_NUMBER: _ClassVar[int]
    MESH_FIELD_NUMBER: _ClassVar[int]
    NAMED_SHARDING_FIELD_NUMBER: _ClassVar[int]
    SINGLE_DEVICE_SHARDING_FIELD_NUMBER: _ClassVar[int]
    GSPMD_SHARDING_FIELD_NUMBER: _ClassVar[int]
    ARRAY_SPEC_FIELD_NUMBER: _ClassVar[int]
    device_list: DeviceList
    mesh: Mesh
    named_sharding: NamedSharding
    single_device_sharding: SingleDeviceSharding
    gspmd_sharding: GspmdSharding
    array_spec: ArraySpec
    def __init__(self, device_list: _Optional[_Union[DeviceList, _Mapping]] = ..., mesh: _Optional[_Union[Mesh, _Mapping]] = ..., named_sharding: _Optional[_Union[NamedSharding, _Mapping]] = ..., single_device_sharding: _Optional[_Union[SingleDeviceSharding, _Mapping]] = ..., gspmd_sharding: _Optional[_Union[GspmdSharding, _Mapping]] = ..., array_spec: _Optional[_Union[ArraySpec, _Mapping]] = ...) -> None: ...

class DeviceList(_message.Message):
    __slots__ = ("iota", "plain", "delta")
    IOTA_FIELD_NUMBER: _ClassVar[int]
    PLAIN_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    iota: IotaDeviceIds
    plain: PlainDeviceIds
    delta: DeltaDeviceIds
    def __init__(self, iota: _Optional[_Union[IotaDeviceIds, _Mapping]] = ..., plain: _Optional[_Union[PlainDeviceIds, _Mapping]] = ..., delta: _Optional[_Union[DeltaDeviceIds, _Mapping]] = ...) -> None: ...

class IotaDeviceIds(_message.Message):
    __slots__ = ("offset", "iota")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    IOTA_FIELD_NUMBER: _ClassVar[int]
    offset: int
    iota: Iota
    def __init__(self, offset: _Optional[int] = ..., iota: _Optional[_Union[Iota, _Mapping]] = ...) -> None: ...

class Iota(_message.Message):
    __slots__ = ("reshape_dims", "transpose_perm")
    RESHAPE_DIMS_FIELD_NUMBER: _ClassVar[int]
    TRANSPOSE_PERM_FIELD_NUMBER: _ClassVar[int]
    reshape_dims: _containers.RepeatedScalarFieldContainer[int]
    transpose_perm: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, reshape_dims: _Optional[_Iterable[int]] = ..., transpose_perm: _Optional[_Iterable[int]] = ...) -> None: ...

class PlainDeviceIds(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DeltaDeviceIds(_message.Message):
    __slots__ = ("deltas",)
    DELTAS_FIELD_NUMBER: _ClassVar[int]
    deltas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, deltas: _Optional[_Iterable[int]] = ...) -> None: ...

class Mesh(_message.Message):
    __slots__ = ("device_list", "axis_sizes", "axis_names", "axis_types")
    DEVICE_LIST_FIELD_NUMBER: _ClassVar[int]
    AXIS_SIZES_FIELD_NUMBER: _ClassVar[int]
    AXIS_NAMES_FIELD_NUMBER: _ClassVar[int]
    AXIS_TYPES_FIELD_NUMBER: _ClassVar[int]
    device_list: int
    axis_sizes: _containers.RepeatedScalarFieldContainer[int]
    axis_names: _containers.RepeatedScalarFieldContainer[str]
    axis_types: _containers.RepeatedScalarFieldContainer[AxisType]
    def __init__(self, device_list: _Optional[int] = ..., axis_sizes: _Optional[_Iterable[int]] = ..., axis_names: _Optional[_Iterable[str]] = ..., axis_types: _Optional[_Iterable[_Union[AxisType, str]]] = ...) -> None: ...

class PartitionSpecEntry(_message.Message):
    __slots__ = ("kind", "axes")
    KIND_FIELD_NUMBER: _ClassVar[int]
    AXES_FIELD_NUMBER: _ClassVar[int]
    kind: PartitionSpecEntryKind
    axes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[PartitionSpecEntryKind, str]] = ..., axes: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionSpec(_message.Message):
    __slots__ = ("entries", "unreduced", "reduced")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    UNREDUCED_FIELD_NUMBER: _ClassVar[int]
    REDUCED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[PartitionSpecEntry]
    unreduced: _containers.RepeatedScalarFieldContainer[str]
    reduced: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, entries: _Optional[_Iterable[_Union[PartitionSpecEntry, _Mapping]]] = ..., unreduced: _Optional[_Iterable[str]] = ..., reduced: _Optional[_Iterable[str]] = ...) -> None: ...

class NamedSharding(_message.Message):
    __slots__ = ("mesh", "spec", "memory_kind")
    MESH_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    MEMORY_KIND_FIELD_NUMBER: _ClassVar[int]
    mesh: int
    spec: PartitionSpec
    memory_kind: str
    def __init__(self, mesh: _Optional[int] = ..., spec: _Optional[_Union[PartitionSpec, _Mapping]] = ..., memory_kind: _Optional[str] = ...) -> None: ...

class SingleDeviceSharding(_message.Message):
    __slots__ = ("device_id", "memory_kind")
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_KIND_FIELD_NUMBER: _ClassVar[int]
    device_id: int
    memory_kind: str
    def __init__(self, device_id: _Optional[int] = ..., memory_kind: _Optional[str] = ...) -> None: ...

class TileAssignment(_message.Message):
    __slots__ = ("dims", "iota", "explicit")
    DIMS_FIELD_NUMBER: _ClassVar[int]
    IOTA_FIELD_NUMBER: _ClassVar[int]
    EXPLICIT_FIELD_NUMBER: _ClassVar[int]
    dims: _containers.RepeatedScalarFieldContainer[int]
    iota: Iota
    explicit: LogicalDeviceIds
    def __init__(self, dims: _Optional[_Iterable[int]] = ..., iota: _Optional[_Union[Iota, _Mapping]] = ..., explicit: _Optional[_Union[LogicalDeviceIds, _Mapping]] = ...) -> None: ...

class LogicalDeviceIds(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[int]] = ...) -> None: ...

class GspmdSharding(_message.Message):
    __slots__ = ("device_list", "type", "tile_assignment", "replicate_on_last_tile_dim", "last_tile_dims", "memory_kind")
    DEVICE_LIST_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TILE_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    REPLICATE_ON_LAST_TILE_DIM_FIELD_NUMBER: _ClassVar[int]
    LAST_TILE_DIMS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_KIND_FIELD_NUMBER: _ClassVar[int]
    device_list: int
    type: ShardingType
    tile_assignment: TileAssignment
    replicate_on_last_tile_dim: bool
    last_tile_dims: _containers.RepeatedScalarFieldContainer[ShardingType]
    memory_kind: str
    def __init__(self, device_list: _Optional[int] = ..., type: _Optional[_Union[ShardingType, str]] = ..., tile_assignment: _Optional[_Union[TileAssignment, _Mapping]] = ..., replicate_on_last_tile_dim: _Optional[bool] = ..., last_tile_dims: _Optional[_Iterable[_Union[ShardingType, str]]] = ..., memory_kind: _Optional[str] = ...) -> None: ...

class KeyType(_message.Message):
    __slots__ = ("impl", "key_shape")
    IMPL_FIELD_NUMBER: _ClassVar[int]
    KEY_SHAPE_FIELD_NUMBER: _ClassVar[int]
    impl: str
    key_shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, impl: _Optional[str] = ..., key_shape: _Optional[_Iterable[int]] = ...) -> None: ...

class ArraySpec(_message.Message):
    __slots__ = ("shape", "dtype", "sharding", "weak_type", "key_type")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    WEAK_TYPE_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    shape: _containers.RepeatedScalarFieldContainer[int]
    dtype: DType
    sharding: int
    weak_type: bool
    key_type: KeyType
    def __init__(self, shape: _Optional[_Iterable[int]] = ..., dtype: _Optional[_Union[DType, str]] = ..., sharding: _Optional[int] = ..., weak_type: _Optional[bool] = ..., key_type: _Optional[_Union[KeyType, _Mapping]] = ...) -> None: ...
