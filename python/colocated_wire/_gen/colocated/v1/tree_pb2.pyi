from colocated_wire._gen.colocated.v1 import limit_pb2 as _limit_pb2
from colocated_wire._gen.colocated.v1 import version_pb2 as _version_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_KIND_UNSPECIFIED: _ClassVar[NodeKind]
    NODE_KIND_LEAF: _ClassVar[NodeKind]
    NODE_KIND_NONE: _ClassVar[NodeKind]
    NODE_KIND_TUPLE: _ClassVar[NodeKind]
    NODE_KIND_LIST: _ClassVar[NodeKind]
    NODE_KIND_DICT: _ClassVar[NodeKind]
    NODE_KIND_NAMEDTUPLE: _ClassVar[NodeKind]
    NODE_KIND_CUSTOM: _ClassVar[NodeKind]
    NODE_KIND_ORDERED_DICT: _ClassVar[NodeKind]
    NODE_KIND_DEFAULT_DICT: _ClassVar[NodeKind]
    NODE_KIND_LEAVES: _ClassVar[NodeKind]
    NODE_KIND_REPEAT: _ClassVar[NodeKind]
NODE_KIND_UNSPECIFIED: NodeKind
NODE_KIND_LEAF: NodeKind
NODE_KIND_NONE: NodeKind
NODE_KIND_TUPLE: NodeKind
NODE_KIND_LIST: NodeKind
NODE_KIND_DICT: NodeKind
NODE_KIND_NAMEDTUPLE: NodeKind
NODE_KIND_CUSTOM: NodeKind
NODE_KIND_ORDERED_DICT: NodeKind
NODE_KIND_DEFAULT_DICT: NodeKind
NODE_KIND_LEAVES: NodeKind
NODE_KIND_REPEAT: NodeKind

class TreeDef(_message.Message):
    __slots__ = ("kinds", "arities", "strings", "dict_keys", "node_types", "type_refs", "node_data", "keys", "key_text", "key_sizes", "fresh_dict_keys", "key_trie")
    KINDS_FIELD_NUMBER: _ClassVar[int]
    ARITIES_FIELD_NUMBER: _ClassVar[int]
    STRINGS_FIELD_NUMBER: _ClassVar[int]
    DICT_KEYS_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPES_FIELD_NUMBER: _ClassVar[int]
    TYPE_REFS_FIELD_NUMBER: _ClassVar[int]
    NODE_DATA_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_TEXT_FIELD_NUMBER: _ClassVar[int]
    KEY_SIZES_FIELD_NUMBER: _ClassVar[int]
    FRESH_DICT_KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_TRIE_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedScalarFieldContainer[NodeKind]
    arities: _containers.RepeatedScalarFieldContainer[int]
    strings: _containers.RepeatedScalarFieldContainer[str]
    dict_keys: _containers.RepeatedScalarFieldContainer[int]
    node_types: _containers.RepeatedCompositeFieldContainer[NodeType]
    type_refs: _containers.RepeatedScalarFieldContainer[int]
    node_data: _containers.RepeatedScalarFieldContainer[bytes]
    keys: _containers.RepeatedCompositeFieldContainer[DictKey]
    key_text: bytes
    key_sizes: _containers.RepeatedScalarFieldContainer[int]
    fresh_dict_keys: bool
    key_trie: KeyTrie
    def __init__(self, kinds: _Optional[_Iterable[_Union[NodeKind, str]]] = ..., arities: _Optional[_Iterable[int]] = ..., strings: _Optional[_Iterable[str]] = ..., dict_keys: _Optional[_Iterable[int]] = ..., node_types: _Optional[_Iterable[_Union[NodeType, _Mapping]]] = ..., type_refs: _Optional[_Iterable[int]] = ..., node_data: _Optional[_Iterable[bytes]] = ..., keys: _Optional[_Iterable[_Union[DictKey, _Mapping]]] = ..., key_text: _Optional[bytes] = ..., key_sizes: _Optional[_Iterable[int]] = ..., fresh_dict_keys: _Optional[bool] = ..., key_trie: _Optional[_Union[KeyTrie, _Mapping]] = ...) -> None: ...

class KeyTrie(_message.Message):
    __slots__ = ("label_text", "label_sizes", "nodes")
    LABEL_TEXT_FIELD_NUMBER: _ClassVar[int]
    LABEL_SIZES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    label_text: bytes
    label_sizes: _containers.RepeatedScalarFieldContainer[int]
    nodes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, label_text: _Optional[bytes] = ..., label_sizes: _Optional[_Iterable[int]] = ..., nodes: _Optional[_Iterable[int]] = ...) -> None: ...

class DictKey(_message.Message):
    __slots__ = ("int", "bool", "none", "float", "bytes", "tuple", "pickle")
    INT_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    NONE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    TUPLE_FIELD_NUMBER: _ClassVar[int]
    PICKLE_FIELD_NUMBER: _ClassVar[int]
    int: int
    bool: bool
    none: bool
    float: float
    bytes: bytes
    tuple: KeyTuple
    pickle: bytes
    def __init__(self, int: _Optional[int] = ..., bool: _Optional[bool] = ..., none: _Optional[bool] = ..., float: _Optional[float] = ..., bytes: _Optional[bytes] = ..., tuple: _Optional[_Union[KeyTuple, _Mapping]] = ..., pickle: _Optional[bytes] = ...) -> None: ...

class KeyTuple(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, items: _Optional[_Iterable[int]] = ...) -> None: ...

class NodeType(_message.Message):
    __slots__ = ("name", "fields", "pickle")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    PICKLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    pickle: bytes
    def __init__(self, name: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., pickle: _Optional[bytes] = ...) -> None: ...
