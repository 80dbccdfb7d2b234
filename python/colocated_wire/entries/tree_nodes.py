"""Node types by name and custom node data: what a tree's typed nodes carry on the wire.

Node types travel by name, "module.QualName". Lifting looks a class up in
`sys.modules` and never imports anything. A namedtuple that is not found is
synthesized with the same name and fields (one class per name and fields,
so equal payloads give equal treedefs); a custom node that is not found is a
`LiftError` (treedef.py).

Custom node data is opaque bytes on the wire. Without pickles this library
writes only what it can read back without running code: aux data `None` is
empty bytes; otherwise `b"j"` followed by compact JSON of a value built from
None, bool, int, str and tuples (written as JSON arrays, read back as
tuples), which covers `register_dataclass` with plain meta fields. Any other
aux data JAX accepts (a frozenset, a function, any hashable object) is
`b"p"` followed by its cloudpickle (colocated.v1.1), written and read only
where pickles are allowed (`allow_pickles`: the plugin's
`install(allow_pickle=True)`, or `allow_pickle=True` to the encode and
decode functions); elsewhere it is an `EncodeError` or a `LiftError` naming
that option. Dict keys and default factories that have no wire form travel
the same way (tree_write.py, treedef.py).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import json
import pickle
import sys
from collections.abc import Iterator
from keyword import iskeyword
from typing import Any

import cloudpickle

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
    """A custom node's aux data as node data: JSON when it is plain, else pickled where
    pickles are allowed (an EncodeError naming the option elsewhere)."""
    if aux is None:
        return b""
    try:
        text = json.dumps(_aux_to_json(aux), separators=(",", ":"), ensure_ascii=False)
    except EncodeError as e:
        return b"p" + pickle_value(aux, f"custom pytree node data {aux!r}", e.detail)
    return b"j" + text.encode()


def is_pickled_node_data(data: bytes) -> bool:
    return data[:1] == b"p"


def decode_node_data(data: bytes) -> Any:
    if data == b"":
        return None
    if is_pickled_node_data(data):
        return unpickle_value(data[1:], "custom pytree node data")
    if data[:1] != b"j":
        raise ValueError("node data is not in a format this library writes")
    return _aux_from_json(json.loads(data[1:].decode()))


# ---- pickles, where allowed ---------------------------------------------------

_PICKLES: contextvars.ContextVar[bool] = contextvars.ContextVar("tree_pickles", default=False)
PICKLE_OPTION = (
    "allow_pickle=True (colocated_wire.plugin.install(allow_pickle=True)) trusts the peer"
    " with pickles, as JAX does"
)


@contextlib.contextmanager
def allow_pickles(allowed: bool) -> Iterator[None]:
    """Inside the block, trees write and read what has no wire form pickled iff `allowed`."""
    token = _PICKLES.set(allowed)
    try:
        yield
    finally:
        _PICKLES.reset(token)


def pickles_allowed() -> bool:
    return _PICKLES.get()


def pickle_value(value: Any, what: str, why: str) -> bytes:
    """`value` pickled, or an EncodeError saying `why` it has no wire form and naming the
    option; one that cannot be pickled is an EncodeError too."""
    if not _PICKLES.get():
        raise EncodeError(f"{why}; {PICKLE_OPTION}, and sends {what} pickled")
    try:
        return cloudpickle.dumps(value)
    except Exception as e:  # what cloudpickle raises for what it cannot pickle varies
        raise EncodeError(f"{what} cannot be pickled: {e}") from e


def unpickle_value(data: bytes, what: str) -> Any:
    """Runs a pickle of a tree, only where pickles are allowed (a LiftError naming the option)."""
    if not _PICKLES.get():
        detail = f"the {what} arrived pickled, and unpickling runs the sender's code"
        raise LiftError(f"{detail}: {PICKLE_OPTION}")
    try:
        return pickle.loads(data)
    except Exception as e:  # a pickle can raise anything
        raise LiftError(f"the pickled {what} cannot be loaded: {e}") from e


class Pickled:
    """A pickled dict key while checking: never run, never ordered against another key."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pickled) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)

    def __lt__(self, other: object) -> bool:
        raise Unordered

    __gt__ = __le__ = __ge__ = __lt__

    def __repr__(self) -> str:
        return f"<pickled key of {len(self.data)} bytes>"


class Unordered(Exception):
    """A comparison met a pickled key: the order written is taken as it is."""


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
