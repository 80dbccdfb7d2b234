"""Programs loaded once (LoadProgram, Execute by handle), deny by default, and input checks
before anything is placed: the worker's servicer over a real channel."""

import hashlib

import grpc
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from test_worker import X, Y, channel_to, float_spec, program, refusal, request, served

from colocated_wire import examples
from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker import execute as worker_execute
from colocated_wire.worker import programs as worker_programs
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import ProgramCache
from colocated_wire.worker.service import ColocatedWorker

EXAMPLES = frozenset({"colocated_wire.examples"})


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def service(capacity=8, **policy) -> ColocatedWorker:
    policy = WorkerPolicy(**{"allowed_modules": EXAMPLES, **policy})
    return ColocatedWorker(policy, programs=ProgramCache(policy, capacity))


def load(stub, prog, version=0) -> bytes:
    req = service_pb2.LoadProgramRequest(version=version, program=prog)
    return stub.LoadProgram(req).handle.digest


def by_handle(digest: bytes, *arrays, version=0) -> service_pb2.ExecuteRequest:
    req = service_pb2.ExecuteRequest(
        version=version, handle=service_pb2.ProgramHandle(digest=digest)
    )
    for a in arrays:
        req.inputs.add(data=np.ascontiguousarray(a).tobytes())
    return req


@pytest.fixture
def lifts(monkeypatch):
    """Counts the programs the worker decodes."""
    counted = []
    decode = worker_programs.deserialize_program

    def counting(data, **kwargs):
        counted.append(bytes(data))
        return decode(data, **kwargs)

    monkeypatch.setattr(worker_programs, "deserialize_program", counting)
    return counted


@pytest.fixture
def placed(monkeypatch):
    """Records every call's input data that reaches placement on devices."""
    seen = []
    place = worker_execute.place_inputs

    def recording(specs, data, devices, direct=None):
        seen.append(len(data))
        return place(specs, data, devices, direct)

    monkeypatch.setattr(worker_execute, "place_inputs", recording)
    return seen


def test_a_program_is_loaded_once_and_called_by_its_handle(mesh, lifts):
    prog = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    with served(service()) as stub:
        digest = load(stub, prog)
        calls = [stub.Execute(by_handle(digest, X, Y * k, Y)) for k in (1, 2, 3)]
        again = load(stub, prog)
    assert digest == hashlib.sha256(prog.SerializeToString()).digest() == again
    assert lifts == [prog.SerializeToString()]  # once, from the bytes as the client sent them
    for k, got in zip((1, 2, 3), calls, strict=True):
        np.testing.assert_array_equal(
            np.frombuffer(got.outputs[0].data, np.float32), (X * Y * k + Y).ravel()
        )


def test_a_call_with_the_whole_payload_is_lifted_once_too(mesh, lifts):
    prog = program(examples.summarize, mesh, float_spec(mesh), float_spec(mesh, P("x")))
    with served(service()) as stub:
        first, second = (stub.Execute(request(prog, X, Y)) for _ in range(2))
    assert len(lifts) == 1
    assert first.SerializeToString() == second.SerializeToString()


def test_unknown_and_evicted_handles_are_not_found(mesh):
    a = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    b = program(examples.fail, mesh, float_spec(mesh))
    with served(service(capacity=1)) as stub:
        unknown = refusal(stub, by_handle(bytes(32), X))
        digest = load(stub, a)
        load(stub, b)  # the cache holds one program: a is evicted
        evicted = refusal(stub, by_handle(digest, X, Y, Y))
        load(stub, a)
        got = stub.Execute(by_handle(digest, X, Y, Y))
    for e in (unknown, evicted):
        assert e.code() == grpc.StatusCode.NOT_FOUND
        assert (
            "is not loaded on this worker (never loaded, evicted from its 1 most recent"
            in e.details()
        )
        assert e.details().endswith("call LoadProgram again")
    assert evicted.details().startswith(f"program handle {digest.hex()[:16]}")
    np.testing.assert_array_equal(
        np.frombuffer(got.outputs[0].data, np.float32), (X * Y + Y).ravel()
    )


def test_a_handle_from_before_a_restart_is_not_found(mesh):
    prog = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    with served(service()) as stub:
        digest = load(stub, prog)
    with served(service()) as stub:  # a new worker process: nothing loaded
        e = refusal(stub, by_handle(digest, X, Y, Y))
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert "loaded before a restart" in e.details()


def test_program_and_handle_together_or_neither_are_refused(mesh):
    prog = program(examples.fail, mesh, float_spec(mesh))
    both = request(prog, X)
    both.handle.digest = bytes(32)
    with served(service()) as stub:
        two = refusal(stub, both)
        none = refusal(stub, service_pb2.ExecuteRequest(version=0))
    assert (two.code(), none.code()) == (grpc.StatusCode.INVALID_ARGUMENT,) * 2
    assert two.details() == "program, handle: a call names its program one way, not both"
    assert none.details() == "program: the request carries no program and no handle"


def test_a_handle_of_a_newer_payload_is_refused_at_an_older_version(mesh):
    prog = program(examples.affine, mesh, *[float_spec(mesh)] * 3, version=1)
    with served(service()) as stub:
        digest = load(stub, prog, version=1)
        e = refusal(stub, by_handle(digest, X, Y, Y, version=0))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details() == (
        "program payload refused: header.minor_version: minor version 1 is newer than the agreed 0"
    )


def test_a_request_that_is_not_protobuf_is_invalid_argument():
    with channel_to(service()) as channel:
        execute = channel.unary_unary("/colocated.v1.ColocatedWorkerService/Execute")
        with pytest.raises(grpc.RpcError) as e:
            execute(b"\x12\xff\x01")  # field 2, a length past the end
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == "request: not a valid protobuf message (field 2 runs past the end)"


@pytest.mark.parametrize(
    ("module", "qualname"), [("posix", "system"), ("builtins", "exec"), ("subprocess", "run")]
)
def test_dangerous_names_are_refused_by_the_worker(mesh, module, qualname):
    prog = program(examples.fail, mesh, float_spec(mesh))
    prog.function.by_name.module, prog.function.by_name.qualname = module, qualname
    with served(service(allowed_modules=frozenset())) as stub:
        e = refusal(stub, request(prog, X))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    assert e.details() == (
        f"function {module}.{qualname}: module {module!r} is not allowed on this worker"
        " (--allow-module, --allow-function; allowed: none)"
    )


def test_allowed_functions_admit_exactly_those_names(mesh):
    allowed = frozenset({"colocated_wire.examples.affine"})
    affine = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    summarize = program(examples.summarize, mesh, float_spec(mesh), float_spec(mesh))
    with served(service(allowed_modules=frozenset(), allowed_functions=allowed)) as stub:
        got = stub.Execute(request(affine, X, Y, Y))
        e = refusal(stub, request(summarize, X, Y))
    np.testing.assert_array_equal(
        np.frombuffer(got.outputs[0].data, np.float32), (X * Y + Y).ravel()
    )
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "allowed: functions colocated_wire.examples.affine)" in e.details()


@pytest.mark.parametrize(
    ("arrays", "detail"),
    [
        ((X, Y), "inputs: 2 arrays for a program of 3 input leaves"),
        ((X, Y, Y, Y), "inputs: 4 arrays for a program of 3 input leaves"),
        ((X, Y[:1], Y), "inputs[1]: 16 bytes, but a float32[8,4] input needs 128"),
        ((X, Y, Y.astype(np.float64)), "inputs[2]: 256 bytes, but a float32[8,4] input needs 128"),
    ],
)
def test_inputs_are_checked_before_any_is_placed(mesh, placed, arrays, detail):
    prog = program(examples.affine, mesh, *[float_spec(mesh)] * 3)
    with served(service()) as stub:
        e = refusal(stub, request(prog, *arrays))
        stub.Execute(request(prog, X, Y, Y))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details() == detail
    assert placed == [3]  # only the good call reached the devices


def test_load_program_refuses_what_execute_refuses(mesh):
    pickled = program(lambda x: x + 1, mesh, float_spec(mesh))
    assert pickled.function.WhichOneof("function") == "pickled"
    with served(service()) as stub, pytest.raises(grpc.RpcError) as e:
        load(stub, pickled)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "--allow-pickle" in e.value.details()
