"""A drop-in backend for jax.experimental.colocated_python: its payloads in colocated.v1.

JAX writes what a colocated call ships (the function with its specialization,
and the output specs a worker sends back) with cloudpickle: no other language
reads it, no version is promised, and reading it runs code. `install()` makes
JAX write and read these payloads with colocated_wire instead, in the very
carriers JAX uses (bytes for the program, a 0-d StringDType array for output
specs, see carrier.py), so nothing else in JAX changes. Whatever else JAX's
`_serialize` is handed (a Mesh, shardings, dtypes, a PRNG impl, a function,
the function-and-specialization tuple before its specs are known) is written
as a value (colocated.v1.2, codec.py), each shared object once. Install it in
every process that runs colocated Python: each reads what the others write.

`func.py` imports its serialization functions by name, so they are rebound in
its namespace as well as in `serialization`'s; `uninstall()` puts JAX's back.
The module is private to JAX and changes between versions, so the versions
this was written against are checked at install (SUPPORTED_JAX).

Trust is explicit. JAX's functions are closures and travel pickled, and
unpickling runs the peer's code: a pickled function is loaded only after
`install(allow_pickle=True)`, and a value's leaf that has no form but a
pickle (a lambda, an arbitrary object) is written and loaded only after it.
Without it, only a module-level function sent by name runs, which is what
JAX sends once a call's output specs are known
(`specialize(out_specs_fn=...)`) and no PRNG key needs wrapping, and only
from the modules `install(allowed_modules=...)` names (deny by default; with
allow_pickle=True and no list, names resolve from any module, which the
pickles could reach anyway).

`install(explain=True)` (or COLOCATED_WIRE_EXPLAIN=1 at install) logs one
WARNING on the `colocated_wire` logger each time a function specializes
again: how its input specs and devices differ from its nearest earlier
specialization (explain.py).
"""

from colocated_wire.jax_support import SUPPORTED_JAX
from colocated_wire.plugin.errors import (
    PickleNotAllowedError,
    PluginEncodeError,
    PluginEncodeTypeError,
    PluginLiftError,
    UnsupportedJaxError,
)
from colocated_wire.plugin.install import install, installed, is_installed, uninstall

__all__ = [
    "SUPPORTED_JAX",
    "PickleNotAllowedError",
    "PluginEncodeError",
    "PluginEncodeTypeError",
    "PluginLiftError",
    "UnsupportedJaxError",
    "install",
    "installed",
    "is_installed",
    "uninstall",
]
