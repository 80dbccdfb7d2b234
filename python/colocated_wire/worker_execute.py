"""One Execute call: check the version, admit and lift the program, place the
inputs, run the function, and describe its outputs.

Every way a call can be refused raises `Refused` with its gRPC status code;
the servicer (worker_service.py) turns that into the call's status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax import tree_util

from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2
from colocated_wire.decode import Program, deserialize_program
from colocated_wire.encode import serialize_specs
from colocated_wire.errors import DecodeError, EncodeError, LiftError
from colocated_wire.functions import UnloadedFunction
from colocated_wire.payload.header import check_header
from colocated_wire.version import SCHEMA_MINOR_VERSION
from colocated_wire.worker_arrays import as_output, output_bytes, output_spec, place_inputs
from colocated_wire.worker_errors import (
    failed_precondition,
    function_failed,
    invalid_argument,
)
from colocated_wire.worker_policy import WorkerPolicy, admit_function, function_name


def execute(
    request: service_pb2.ExecuteRequest, policy: WorkerPolicy
) -> service_pb2.ExecuteResponse:
    """Runs the request's program on its inputs; raises Refused when it cannot."""
    check_version(request.version, policy)
    if not request.HasField("program"):
        raise invalid_argument("program: the request carries no program")
    # The header first: a payload newer than the agreed version is refused as such.
    try:
        header = request.program.header if request.program.HasField("header") else None
        check_header(header, payload_pb2.PAYLOAD_KIND_PROGRAM, request.version)
    except DecodeError as e:
        raise invalid_argument(f"program payload refused: {e}") from e
    admit_function(request.program.function, policy)
    program = load_program(request.program.SerializeToString(), request.version, policy)
    name = function_name(request.program.function)
    arrays = place_inputs(program.in_leaves, [a.data for a in request.inputs], program.devices)
    args, kwargs = call_arguments(program, arrays)
    return describe_outputs(name, run(name, program.fun, args, kwargs), request.version)


def check_version(version: int, policy: WorkerPolicy) -> None:
    """The request's version must be one this worker negotiates."""
    r = policy.versions
    if not r.min_version <= version <= r.max_version:
        raise failed_precondition(
            f"request version 1.{version} is outside this worker's colocated.v1 range {r}"
            " (negotiate with GetVersion first)"
        )


def load_program(data: bytes, version: int, policy: WorkerPolicy) -> Program:
    """The lifted program, decoded no newer than the agreed version."""
    try:
        program = deserialize_program(
            data,
            allow_pickle=policy.allow_pickle,
            allowed_modules=policy.allowed_modules,
            max_minor_version=version,
        )
    except DecodeError as e:
        raise invalid_argument(f"program payload refused: {e}") from e
    except LiftError as e:
        raise failed_precondition(f"the program cannot run on this worker: {e}") from e
    except Exception as e:  # noqa: BLE001 - unpickling can raise anything
        raise invalid_argument(f"the program cannot be loaded: {type(e).__name__}: {e}") from e
    if isinstance(program.fun, UnloadedFunction):
        raise failed_precondition(f"the function was not loaded: {program.fun.reason}")
    return program


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


def run(name: str, fun: Callable, args: tuple, kwargs: dict) -> Any:
    """The function's result; an exception it raises is reported, not re-raised."""
    try:
        return fun(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the function is the caller's code
        raise function_failed(f"{name} raised {type(e).__name__}: {e}") from e


def describe_outputs(name: str, result: Any, version: int) -> service_pb2.ExecuteResponse:
    """The outputs' SpecsPayload (shardings as JAX gave them) of the agreed minor version,
    and their bytes."""
    leaves, treedef = tree_util.tree_flatten(result)
    outputs = [as_output(i, leaf) for i, leaf in enumerate(leaves)]
    try:
        out_specs = [output_spec(x) for x in outputs]
        # The agreed version, or the newest this library writes if a peer agreed a newer one.
        target = min(version, SCHEMA_MINOR_VERSION)
        specs = serialize_specs(treedef, out_specs, target_minor_version=target)
    except EncodeError as e:
        raise function_failed(f"the outputs of {name} cannot be written: {e}") from e
    response = service_pb2.ExecuteResponse()
    response.output_specs.MergeFromString(specs)
    response.output_specs.SetInParent()
    try:
        response.outputs.extend(service_pb2.ArrayData(data=output_bytes(x)) for x in outputs)
    except Exception as e:  # noqa: BLE001 - JAX reports a failed computation on readback
        raise function_failed(f"{name} failed computing its outputs: {e}") from e
    return response
