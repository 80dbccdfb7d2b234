"""Where JAX's colocated_python serialization functions are bound, on every supported JAX.

`func.py` imports the serialization functions it calls by name, so the plugin
rebinds them there as well as in `serialization`. Before JAX 0.8, func.py does
not import `_deserialize` (its CPU fallback runs the function in process and
never reads a program back), so only the names each module has are rebound.

The output-spec carrier differs too. JAX 0.4.38's `_serialize_specs` returns
two arrays, an int32 length and a uint8 buffer of `_MAX_SERIALIZED_SPECS_SIZE`
(1 MiB) bytes, and `_deserialize_specs` takes that pair back; from 0.5 the
carrier is one 0-d StringDType array of base64 text. plugin/carrier.py writes
whichever this JAX's func.py expects, by `SPECS_BUFFER_BYTES`.
"""

from __future__ import annotations

from types import ModuleType

from jax.experimental.colocated_python import func, serialization

NAMES = ("_serialize", "_deserialize", "_serialize_specs", "_deserialize_specs")

MODULES: tuple[ModuleType, ...] = (func, serialization)

# (module, name) of each binding the plugin replaces: all of serialization's, and those of
# func's that this JAX imports there.
BINDINGS: tuple[tuple[ModuleType, str], ...] = tuple(
    (module, name)
    for module in MODULES
    for name in NAMES
    if module is serialization or hasattr(module, name)
)


SPECS_BUFFER_BYTES: int | None = getattr(serialization, "_MAX_SERIALIZED_SPECS_SIZE", None)
"""The fixed size of the uint8 output-spec buffer (JAX 0.4.38), or None: a StringDType scalar."""


def missing() -> list[str]:
    """serialization's names this JAX lacks, which the plugin cannot replace."""
    return [f"{serialization.__name__}.{n}" for n in NAMES if not hasattr(serialization, n)]
