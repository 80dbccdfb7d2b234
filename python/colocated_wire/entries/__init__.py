"""One codec per entry kind: each module has `lower`, `check` and `lift`, its rules and enums.

`lower(obj, ctx)` writes a JAX object as its message, adding what it refers
to through the table builder; `check(msg, ctx)` checks a message and returns
the facts lifting needs, without building any JAX object; `lift(msg, ctx)`
turns a checked message into its JAX object. `TYPE` is the class a kind
lowers. The treedef (entries/treedef.py) has the same shape but sits in the
specs, not in the table.
"""

from types import ModuleType
from typing import Any

from colocated_wire.entries import (
    array_spec,
    device_list,
    gspmd_sharding,
    mesh,
    named_sharding,
    single_device_sharding,
)

# The codec of each table entry kind, by the `Entry` oneof case.
ENTRIES = {
    "device_list": device_list,
    "mesh": mesh,
    "named_sharding": named_sharding,
    "single_device_sharding": single_device_sharding,
    "gspmd_sharding": gspmd_sharding,
    "array_spec": array_spec,
}

_BY_TYPE = {codec.TYPE: (kind, codec) for kind, codec in ENTRIES.items()}


def codec_of(obj: Any) -> tuple[str, ModuleType] | None:
    """(kind, module) that lowers an object, by its class (a subclass found by isinstance)."""
    found = _BY_TYPE.get(type(obj))
    if found is None:
        found = next((kc for t, kc in _BY_TYPE.items() if isinstance(obj, t)), None)
    return found
