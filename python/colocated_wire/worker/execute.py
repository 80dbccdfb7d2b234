"""One Execute call: check the version, find the program (by handle, or by
its payload, lifted once), check the inputs, place them, run the function,
and describe its outputs.

Every way a call can be refused raises `Refused` with its gRPC status code;
the servicer (worker/service.py) turns that into the call's status. Between
the steps the call checks that its client still waits, so a cancelled call
or one past its deadline stops there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc
import jax
from jax import tree_util

from colocated_wire.decode import Program
from colocated_wire.encode import serialize_specs
from colocated_wire.errors import EncodeError
from colocated_wire.version import SCHEMA_MINOR_VERSION
from colocated_wire.worker.arrays import as_output, output_bytes, output_spec, place_inputs
from colocated_wire.worker.device_turn import TURN
from colocated_wire.worker.errors import (
    cancelled,
    failed_precondition,
    function_failed,
    invalid_argument,
)
from colocated_wire.worker.job import check_unary
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import LoadedProgram, ProgramCache
from colocated_wire.worker.requests import ExecuteCall
from colocated_wire.worker.responses import execute_response


def execute(
    call: ExecuteCall, policy: WorkerPolicy, programs: ProgramCache, context: grpc.ServicerContext
) -> bytes:
    """Runs the call's program on its inputs; raises Refused when it cannot."""
    check_version(call.version, policy)
    loaded = find_program(call, programs)
    check_unary(loaded.program.devices)  # a program over many processes runs sharded
    loaded.inputs.check(call.inputs)
    check_active(context, "placing its inputs")
    program = loaded.program
    arrays = place_inputs(program.in_leaves, call.inputs, program.devices, loaded.direct)
    args, kwargs = call_arguments(program, arrays)
    check_active(context, "running its function")
    result = run_on_devices(loaded.name, program.fun, args, kwargs, program.devices, context)
    check_active(context, "reading its outputs")
    return describe_outputs(loaded.name, result, call.version)


def find_program(call: ExecuteCall, programs: ProgramCache) -> LoadedProgram:
    """The program the call names by handle, or the one its payload holds."""
    if call.handle and call.program is not None:
        raise invalid_argument("program, handle: a call names its program one way, not both")
    if call.handle:
        return programs.get(call.handle, call.version)
    if call.program is None:
        raise invalid_argument("program: the request carries no program and no handle")
    return programs.load(call.program, call.version)


def check_active(context: grpc.ServicerContext, step: str) -> None:
    """Stops the work of a call whose client cancelled it or whose deadline passed."""
    if not context.is_active():
        raise cancelled(f"the call was cancelled or passed its deadline before {step}")


def check_version(version: int, policy: WorkerPolicy) -> None:
    """The request's version must be one this worker negotiates."""
    r = policy.versions
    if not r.min_version <= version <= r.max_version:
        raise failed_precondition(
            f"request version 1.{version} is outside this worker's colocated.v1 range {r}"
            " (negotiate with GetVersion first)"
        )


def call_arguments(program: Program, arrays: list[jax.Array]) -> tuple[tuple, dict]:
    """(args, kwargs): JAX's colocated Python flattens its inputs as that pair."""
    tree = tree_util.tree_unflatten(program.in_treedef, arrays)
    if not (
        type(tree) is tuple and len(tree) == 2 and type(tree[0]) is tuple and type(tree[1]) is dict
    ):
        raise invalid_argument(
            "input_specs: the tree must be (args tuple, kwargs dict), as JAX's colocated"
            f" Python builds it; got {program.in_treedef}"
        )
    return tree


def run_on_devices(
    name: str,
    fun: Callable,
    args: tuple,
    kwargs: dict,
    devices: Sequence[jax.Device],
    context: grpc.ServicerContext,
) -> Any:
    """The function's result; over several devices launched in the devices' turn
    (worker/device_turn.py) and waited for within it."""
    if len(devices) < 2:
        # No turn to hold while the outputs are computed: reading them back waits for them
        # and names a failed computation as `finished` does, with one GIL hand-off fewer.
        return run(name, fun, args, kwargs)
    return TURN.run(
        devices,
        context,
        lambda: run(name, fun, args, kwargs),
        lambda launched: finished(name, launched),
    )


def run(name: str, fun: Callable, args: tuple, kwargs: dict) -> Any:
    """The function's result; an exception it raises is reported, not re-raised."""
    try:
        return fun(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the function is the caller's code
        raise function_failed(f"{name} raised {type(e).__name__}: {e}") from e


def finished(name: str, result: Any) -> Any:
    """The result once its arrays are computed; a failed computation is the function's error."""
    try:
        return jax.block_until_ready(result)
    except Exception as e:  # noqa: BLE001 - JAX reports a failed computation here
        raise function_failed(f"{name} failed computing its outputs: {e}") from e


# SpecsPayload bytes by all that decides them, so that a program called again and again with
# outputs of the same kind writes them once. Bounded: emptied when full.
_written_specs: dict[tuple, bytes] = {}
_MAX_WRITTEN_SPECS = 256


def output_specs_payload(name: str, result: Any, version: int) -> tuple[list[Any], bytes]:
    """A result's output arrays, and their SpecsPayload of the agreed minor version."""
    leaves, treedef = tree_util.tree_flatten(result)
    outputs = [as_output(i, leaf) for i, leaf in enumerate(leaves)]
    # The agreed version, or the newest this library writes if a peer agreed a newer one.
    target = min(version, SCHEMA_MINOR_VERSION)
    key = (target, treedef, *((x.shape, x.dtype, x.sharding, weak_type(x)) for x in outputs))
    written = _written_specs.get(key)
    if written is not None:
        return outputs, written
    try:
        out_specs = [output_spec(x) for x in outputs]
        written = serialize_specs(treedef, out_specs, target_minor_version=target)
    except EncodeError as e:
        raise function_failed(f"the outputs of {name} cannot be written: {e}") from e
    if len(_written_specs) >= _MAX_WRITTEN_SPECS:
        _written_specs.clear()
    _written_specs[key] = written
    return outputs, written


def weak_type(x: Any) -> bool:
    return getattr(x, "weak_type", False)  # a PRNG key array has none


def describe_outputs(name: str, result: Any, version: int) -> bytes:
    """The ExecuteResponse: the outputs' SpecsPayload (shardings as JAX gave them) of the
    agreed minor version, and their bytes."""
    outputs, specs = output_specs_payload(name, result, version)
    try:
        data = [output_bytes(x) for x in outputs]
    except Exception as e:  # noqa: BLE001 - JAX reports a failed computation on readback
        raise function_failed(f"{name} failed computing its outputs: {e}") from e
    return execute_response(specs, data)
