"""Node types by name and custom node data: what a tree's typed nodes carry on the wire.

Node types travel by name, "module.QualName". Lifting looks a class up in
`sys.modules` and never imports anything. A namedtuple that is not found is
synthesized with the same name and fields (one class per name and fields,
so equal payloads give equal treedefs); a custom node that is not found is a
`LiftError` (treedef.py).

Custom node data is opaque bytes on the wire. This library writes only what
it can read back without running code: aux data `None` is empty bytes;
otherwise `b"j"` followed by compact JSON of a value built from None, bool,
int, str and tuples (written as JSON arrays, read back as tuples), which
covers `register_dataclass` (its aux data is a tuple of meta-field values).
Anything else is an `EncodeError`.
"""

from __future__ import annotations

import collections
import json
import sys
from keyword import iskeyword
from typing import Any

from colocated_wire.errors import EncodeError, LiftError


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


# ---- custom node data -------------------------------------------------------


def _aux_to_json(aux: Any) -> Any:
    if aux is None or isinstance(aux, bool | int | str):
        return aux
    if type(aux) is tuple:
        return [_aux_to_json(a) for a in aux]
    raise EncodeError(
        f"custom pytree node data {aux!r} of type {type(aux).__name__} cannot be encoded:"
        " only None, bool, int, str and tuples of them are supported"
    )


def _aux_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_aux_from_json(v) for v in value)
    if value is None or isinstance(value, bool | int | str):
        return value
    raise ValueError(f"unsupported node data value {value!r}")


def encode_node_data(aux: Any) -> bytes:
    if aux is None:
        return b""
    text = json.dumps(_aux_to_json(aux), separators=(",", ":"), ensure_ascii=False)
    return b"j" + text.encode()


def decode_node_data(data: bytes) -> Any:
    if data == b"":
        return None
    if data[:1] != b"j":
        raise ValueError("node data is not in a format this library writes")
    return _aux_from_json(json.loads(data[1:].decode()))


# ---- finding node types by name ---------------------------------------------

_SYNTHESIZED: dict[tuple[str, tuple[str, ...]], type] = {}


def find_object(name: str, accept: Any = callable) -> Any:
    """The object named "module.QualName" among already-imported modules that `accept`s,
    or None."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj: Any = mod
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None and accept(obj):
            return obj
    return None


def find_class(name: str) -> type | None:
    """The class named "module.QualName" among already-imported modules."""
    return find_object(name, lambda obj: isinstance(obj, type))


def namedtuple_class(name: str, fields: tuple[str, ...]) -> type:
    cls = find_class(name)
    if cls is not None and is_namedtuple(cls) and tuple(cls._fields) == fields:
        return cls
    key = (name, fields)
    if key not in _SYNTHESIZED:
        module, _, qualname = name.rpartition(".")
        typename = qualname.rpartition(".")[2]
        if not typename.isidentifier() or iskeyword(typename):
            typename = "namedtuple"
        _SYNTHESIZED[key] = collections.namedtuple(typename, fields, module=module or None)
    return _SYNTHESIZED[key]


def default_factory(name: str) -> Any:
    """A defaultdict's default_factory by name ("" is None), among imported modules only."""
    if not name:
        return None
    factory = find_object(name)
    if factory is None:
        raise LiftError(
            f"the default_factory {name} of a defaultdict is not defined in this process"
        )
    return factory
