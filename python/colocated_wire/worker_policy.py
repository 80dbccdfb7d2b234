"""What a worker was told to allow: versions, modules for functions by name, pickles.

The function is admitted before the program is lifted, so a module that is
not allowed is never imported and a pickle that is not allowed is never run.
"""

from __future__ import annotations

import dataclasses

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.negotiate import DEFAULT_VERSION_RANGE, VersionRange
from colocated_wire.worker_errors import invalid_argument, permission_denied


@dataclasses.dataclass(frozen=True)
class WorkerPolicy:
    """A worker's flags: its version range, allowed modules, and whether pickles run."""

    versions: VersionRange = DEFAULT_VERSION_RANGE
    allowed_modules: frozenset[str] = frozenset()
    allow_pickle: bool = False


def function_name(fn: payload_pb2.Function) -> str:
    """How messages name the program's function."""
    case = fn.WhichOneof("function")
    if case == "by_name":
        return f"{fn.by_name.module}.{fn.by_name.qualname}"
    return "the pickled function" if case == "pickled" else "the function"


def admit_function(fn: payload_pb2.Function, policy: WorkerPolicy) -> None:
    """Raises Refused unless the policy lets this worker load the function."""
    case = fn.WhichOneof("function")
    if case == "by_name":
        module = fn.by_name.module
        if module not in policy.allowed_modules:
            allowed = ", ".join(sorted(policy.allowed_modules)) or "none"
            raise permission_denied(
                f"function {function_name(fn)}: module {module!r} is not allowed on this worker"
                f" (--allow-module; allowed: {allowed})"
            )
    elif case == "pickled":
        if not policy.allow_pickle:
            raise permission_denied(
                "the program's function is pickled, and this worker runs pickled functions"
                " only when started with --allow-pickle"
            )
    else:
        raise invalid_argument("function: the program has no function of a kind this worker knows")
