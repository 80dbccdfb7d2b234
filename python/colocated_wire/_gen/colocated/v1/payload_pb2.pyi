from colocated_wire._gen.colocated.v1 import limit_pb2 as _limit_pb2
from colocated_wire._gen.colocated.v1 import table_pb2 as _table_pb2
from colocated_wire._gen.colocated.v1 import tree_pb2 as _tree_pb2
from colocated_wire._gen.colocated.v1 import version_pb2 as _version_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WriterLanguage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WRITER_LANGUAGE_UNSPECIFIED: _ClassVar[WriterLanguage]
    WRITER_LANGUAGE_TYPESCRIPT: _ClassVar[WriterLanguage]
    WRITER_LANGUAGE_PYTHON: _ClassVar[WriterLanguage]

class PayloadKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PAYLOAD_KIND_UNSPECIFIED: _ClassVar[PayloadKind]
    PAYLOAD_KIND_SPECS: _ClassVar[PayloadKind]
    PAYLOAD_KIND_PROGRAM: _ClassVar[PayloadKind]
    PAYLOAD_KIND_VALUE: _ClassVar[PayloadKind]
WRITER_LANGUAGE_UNSPECIFIED: WriterLanguage
WRITER_LANGUAGE_TYPESCRIPT: WriterLanguage
WRITER_LANGUAGE_PYTHON: WriterLanguage
PAYLOAD_KIND_UNSPECIFIED: PayloadKind
PAYLOAD_KIND_SPECS: PayloadKind
PAYLOAD_KIND_PROGRAM: PayloadKind
PAYLOAD_KIND_VALUE: PayloadKind

class Header(_message.Message):
    __slots__ = ("major_version", "minor_version", "kind", "writer")
    MAJOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    MINOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WRITER_FIELD_NUMBER: _ClassVar[int]
    major_version: int
    minor_version: int
    kind: PayloadKind
    writer: Writer
    def __init__(self, major_version: _Optional[int] = ..., minor_version: _Optional[int] = ..., kind: _Optional[_Union[PayloadKind, str]] = ..., writer: _Optional[_Union[Writer, _Mapping]] = ...) -> None: ...

class Writer(_message.Message):
    __slots__ = ("library", "version", "language", "python", "jax", "cloudpickle")
    LIBRARY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    JAX_FIELD_NUMBER: _ClassVar[int]
    CLOUDPICKLE_FIELD_NUMBER: _ClassVar[int]
    library: str
    version: str
    language: WriterLanguage
    python: str
    jax: str
    cloudpickle: str
    def __init__(self, library: _Optional[str] = ..., version: _Optional[str] = ..., language: _Optional[_Union[WriterLanguage, str]] = ..., python: _Optional[str] = ..., jax: _Optional[str] = ..., cloudpickle: _Optional[str] = ...) -> None: ...

class PayloadEnvelope(_message.Message):
    __slots__ = ("header",)
    HEADER_FIELD_NUMBER: _ClassVar[int]
    header: Header
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class Specs(_message.Message):
    __slots__ = ("treedef", "leaves", "leaf_copies")
    TREEDEF_FIELD_NUMBER: _ClassVar[int]
    LEAVES_FIELD_NUMBER: _ClassVar[int]
    LEAF_COPIES_FIELD_NUMBER: _ClassVar[int]
    treedef: _tree_pb2.TreeDef
    leaves: _containers.RepeatedScalarFieldContainer[int]
    leaf_copies: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, treedef: _Optional[_Union[_tree_pb2.TreeDef, _Mapping]] = ..., leaves: _Optional[_Iterable[int]] = ..., leaf_copies: _Optional[_Iterable[int]] = ...) -> None: ...

class SpecsPayload(_message.Message):
    __slots__ = ("header", "table", "specs")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SPECS_FIELD_NUMBER: _ClassVar[int]
    header: Header
    table: _table_pb2.SharedObjectTable
    specs: Specs
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ..., table: _Optional[_Union[_table_pb2.SharedObjectTable, _Mapping]] = ..., specs: _Optional[_Union[Specs, _Mapping]] = ...) -> None: ...

class FunctionRef(_message.Message):
    __slots__ = ("module", "qualname")
    MODULE_FIELD_NUMBER: _ClassVar[int]
    QUALNAME_FIELD_NUMBER: _ClassVar[int]
    module: str
    qualname: str
    def __init__(self, module: _Optional[str] = ..., qualname: _Optional[str] = ...) -> None: ...

class PickledFunction(_message.Message):
    __slots__ = ("pickle", "refs")
    PICKLE_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    pickle: bytes
    refs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pickle: _Optional[bytes] = ..., refs: _Optional[_Iterable[int]] = ...) -> None: ...

class Function(_message.Message):
    __slots__ = ("by_name", "pickled")
    BY_NAME_FIELD_NUMBER: _ClassVar[int]
    PICKLED_FIELD_NUMBER: _ClassVar[int]
    by_name: FunctionRef
    pickled: PickledFunction
    def __init__(self, by_name: _Optional[_Union[FunctionRef, _Mapping]] = ..., pickled: _Optional[_Union[PickledFunction, _Mapping]] = ...) -> None: ...

class ProgramPayload(_message.Message):
    __slots__ = ("header", "table", "function", "input_specs", "output_specs", "devices")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPECS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    header: Header
    table: _table_pb2.SharedObjectTable
    function: Function
    input_specs: Specs
    output_specs: Specs
    devices: int
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ..., table: _Optional[_Union[_table_pb2.SharedObjectTable, _Mapping]] = ..., function: _Optional[_Union[Function, _Mapping]] = ..., input_specs: _Optional[_Union[Specs, _Mapping]] = ..., output_specs: _Optional[_Union[Specs, _Mapping]] = ..., devices: _Optional[int] = ...) -> None: ...

class ValuePayload(_message.Message):
    __slots__ = ("header", "table", "value")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    header: Header
    table: _table_pb2.SharedObjectTable
    value: Value
    def __init__(self, header: _Optional[_Union[Header, _Mapping]] = ..., table: _Optional[_Union[_table_pb2.SharedObjectTable, _Mapping]] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("treedef", "leaves")
    TREEDEF_FIELD_NUMBER: _ClassVar[int]
    LEAVES_FIELD_NUMBER: _ClassVar[int]
    treedef: _tree_pb2.TreeDef
    leaves: _containers.RepeatedCompositeFieldContainer[ValueLeaf]
    def __init__(self, treedef: _Optional[_Union[_tree_pb2.TreeDef, _Mapping]] = ..., leaves: _Optional[_Iterable[_Union[ValueLeaf, _Mapping]]] = ...) -> None: ...

class ValueLeaf(_message.Message):
    __slots__ = ("entry", "dtype", "prng_impl", "function", "pickled")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    PRNG_IMPL_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    PICKLED_FIELD_NUMBER: _ClassVar[int]
    entry: int
    dtype: DTypeValue
    prng_impl: _table_pb2.KeyType
    function: FunctionRef
    pickled: PickledValue
    def __init__(self, entry: _Optional[int] = ..., dtype: _Optional[_Union[DTypeValue, _Mapping]] = ..., prng_impl: _Optional[_Union[_table_pb2.KeyType, _Mapping]] = ..., function: _Optional[_Union[FunctionRef, _Mapping]] = ..., pickled: _Optional[_Union[PickledValue, _Mapping]] = ...) -> None: ...

class DTypeValue(_message.Message):
    __slots__ = ("dtype", "key_type")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    dtype: _table_pb2.DType
    key_type: _table_pb2.KeyType
    def __init__(self, dtype: _Optional[_Union[_table_pb2.DType, str]] = ..., key_type: _Optional[_Union[_table_pb2.KeyType, _Mapping]] = ...) -> None: ...

class PickledValue(_message.Message):
    __slots__ = ("pickle", "refs")
    PICKLE_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    pickle: bytes
    refs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pickle: _Optional[bytes] = ..., refs: _Optional[_Iterable[int]] = ...) -> None: ...
