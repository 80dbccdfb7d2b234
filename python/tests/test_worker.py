"""The worker's servicer on an in-process gRPC server, over a real channel."""

import contextlib
from concurrent import futures

import grpc
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import SCHEMA_MINOR_VERSION, deserialize_specs, examples, serialize_program
from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2, service_pb2_grpc
from colocated_wire.negotiate import VersionRange
from colocated_wire.worker.main import main as worker_main
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker, handlers

EXAMPLES = frozenset({"colocated_wire.examples"})
SDS = jax.ShapeDtypeStruct


@contextlib.contextmanager
def worker(**policy):
    """A stub for a worker with this policy, served in-process on a free port."""
    with served(ColocatedWorker(WorkerPolicy(**{"allowed_modules": EXAMPLES, **policy}))) as stub:
        yield stub


@contextlib.contextmanager
def served(service: ColocatedWorker, threads: int = 4):
    """A stub for this servicer, served in-process on a free port as the worker serves it."""
    with channel_to(service, threads) as channel:
        yield service_pb2_grpc.ColocatedWorkerServiceStub(channel)


@contextlib.contextmanager
def channel_to(service: ColocatedWorker, threads: int = 4):
    """A channel to this servicer, served in-process on a free port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads))
    server.add_generic_rpc_handlers((handlers(service),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        server.stop(grace=None)


@pytest.fixture(scope="module")
def mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def program(fun, mesh, *arg_specs, version=0) -> payload_pb2.ProgramPayload:
    """A program as a client of minor version `version` writes it."""
    leaves, treedef = jax.tree_util.tree_flatten((tuple(arg_specs), {}))
    devices = list(mesh.devices.flat)
    data = serialize_program(
        fun, treedef, leaves, None, None, devices, target_minor_version=version
    )
    return payload_pb2.ProgramPayload.FromString(data)


def request(prog, *arrays, version=0) -> service_pb2.ExecuteRequest:
    req = service_pb2.ExecuteRequest(version=version, program=prog)
    for a in arrays:
        req.inputs.add(data=np.ascontiguousarray(a).tobytes())
    return req


def refusal(stub, req) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        stub.Execute(req)
    return e.value


def get_version(stub, lo: int, hi: int) -> service_pb2.GetVersionResponse:
    client = service_pb2.VersionRange(min_version=lo, max_version=hi)
    return stub.GetVersion(service_pb2.GetVersionRequest(client=client))


def float_spec(mesh, spec=None):
    return SDS((8, 4), np.float32, sharding=NamedSharding(mesh, spec or P("x", "y")))


X = np.arange(32, dtype=np.float32).reshape(8, 4) - 10
Y = np.full((8, 4), 0.5, np.float32)


def test_get_version_agrees_at_the_lower_max():
    with worker(versions=VersionRange(0, 0)) as stub:
        got = get_version(stub, 0, 1)
    assert (got.version, got.server.min_version, got.server.max_version) == (0, 0, 0)


@pytest.mark.parametrize(
    ("client", "server", "text"),
    [
        ((0, 0), (1, 2), "client supports 1.0–1.0, server 1.1–1.2"),
        ((2, 3), (0, 1), "client supports 1.2–1.3, server 1.0–1.1"),
    ],
)
def test_get_version_without_a_common_version(client, server, text):
    with worker(versions=VersionRange(*server)) as stub, pytest.raises(grpc.RpcError) as e:
        get_version(stub, *client)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert e.value.details() == f"no common colocated.v1 version: {text}"


def test_execute_by_name(mesh):
    prog = program(examples.summarize, mesh, float_spec(mesh), float_spec(mesh, P("x")))
    with worker() as stub:
        got = stub.Execute(request(prog, X, Y))
    treedef, leaves = deserialize_specs(got.output_specs.SerializeToString())
    names = ["count_positive", "doubled", "positive", "row_sums", "sum"]  # sorted, as JAX does
    out = dict(zip(names, zip(leaves, got.outputs, strict=True), strict=True))
    assert treedef == jax.tree_util.tree_structure(dict.fromkeys(out, 0))
    doubled, doubled_data = out["doubled"]
    assert (doubled.shape, doubled.dtype) == ((8, 4), np.float32)
    assert doubled.sharding == NamedSharding(mesh, P("x", "y"))
    np.testing.assert_array_equal(np.frombuffer(doubled_data.data, np.float32).reshape(8, 4), X * 2)
    count, count_data = out["count_positive"]
    assert (count.shape, count.dtype) == ((), np.int32)
    assert np.frombuffer(count_data.data, np.int32)[0] == (X > 0).sum()
    positive, positive_data = out["positive"]
    assert positive.dtype == np.bool_
    np.testing.assert_array_equal(np.frombuffer(positive_data.data, np.bool_), (X > 0).ravel())
    # Every output is on the one lifted mesh instance.
    meshes = {id(leaf.sharding.mesh) for leaf in leaves}
    assert len(meshes) == 1 and leaves[0].sharding.mesh == mesh


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, np.int8, np.float16]
)
def test_ml_dtypes_travel_as_numpys_do(mesh, dtype):
    # bfloat16, float8 and int4 are NumPy dtypes of kind "V" (as raw voids are); they have a
    # fixed size all the same.
    x = (np.arange(32).reshape(8, 4) % 7).astype(dtype)
    one = np.ones((), dtype)
    spec = SDS((8, 4), dtype, sharding=NamedSharding(mesh, P("x", "y")))
    scalar = SDS((), dtype, sharding=NamedSharding(mesh, P()))
    prog = program(examples.affine, mesh, spec, scalar, scalar)
    with worker() as stub:
        got = stub.Execute(request(prog, x, one, one))
    _, (out,) = deserialize_specs(got.output_specs.SerializeToString())
    assert (out.shape, out.dtype) == ((8, 4), np.dtype(dtype))
    want = np.asarray(examples.affine(jnp.asarray(x), jnp.asarray(one), jnp.asarray(one)))
    got_x = np.frombuffer(got.outputs[0].data, dtype).reshape(8, 4)
    np.testing.assert_array_equal(got_x.astype(np.float32), want.astype(np.float32))


def test_module_not_allowed(mesh):
    prog = program(examples.fail, mesh, float_spec(mesh))
    with worker(allowed_modules=frozenset({"numpy"})) as stub:
        e = refusal(stub, request(prog, X))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "module 'colocated_wire.examples' is not allowed" in e.details()


def test_pickled_function_needs_allow_pickle(mesh):
    offset = 3.0
    prog = program(lambda x: x + offset, mesh, float_spec(mesh))
    assert prog.function.WhichOneof("function") == "pickled"
    with worker() as stub:
        e = refusal(stub, request(prog, X))
    assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "--allow-pickle" in e.details()
    with worker(allow_pickle=True) as stub:
        got = stub.Execute(request(prog, X))
    np.testing.assert_array_equal(np.frombuffer(got.outputs[0].data, np.float32), (X + 3).ravel())


def test_input_data_must_fit_the_specs(mesh):
    prog = program(examples.summarize, mesh, float_spec(mesh), float_spec(mesh))
    with worker() as stub:
        short = refusal(stub, request(prog, X, Y[:2]))
        missing = refusal(stub, request(prog, X))
    assert short.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert short.details() == "inputs[1]: 32 bytes, but a float32[8,4] input needs 128"
    assert missing.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert missing.details() == "inputs: 1 arrays for a program of 2 input leaves"


def test_version_outside_the_worker_range(mesh):
    prog = program(examples.fail, mesh, float_spec(mesh))
    with worker(versions=VersionRange(0, 0)) as stub:
        e = refusal(stub, request(prog, X, version=1))
    assert e.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "request version 1.1 is outside this worker's colocated.v1 range 1.0–1.0" in e.details()


@pytest.mark.parametrize("version", [0, SCHEMA_MINOR_VERSION])
def test_output_specs_are_written_in_the_agreed_version(mesh, version):
    prog = program(examples.affine, mesh, *[float_spec(mesh)] * 3, version=version)
    with worker() as stub:
        got = stub.Execute(request(prog, X, Y, Y, version=version))
    assert got.output_specs.header.minor_version == version
    assert prog.header.minor_version == version


def test_key_arrays_travel_as_key_data_from_1_1_on(mesh):
    # More in test_worker_keys.py (key arrays and float0, against a worker process).
    prog = program(examples.make_key, mesh, float_spec(mesh), version=SCHEMA_MINOR_VERSION)
    prog_1_0 = program(examples.make_key, mesh, float_spec(mesh), version=0)
    with worker() as stub:
        got = stub.Execute(request(prog, X, version=SCHEMA_MINOR_VERSION))
        old = refusal(stub, request(prog_1_0, X, version=0))
    _, (out_spec,) = deserialize_specs(got.output_specs.SerializeToString())
    keys = examples.make_key(X)
    assert out_spec.dtype == keys.dtype and out_spec.shape == keys.shape
    assert got.outputs[0].data == np.asarray(jax.random.key_data(keys)).tobytes()
    assert old.code() == grpc.StatusCode.UNKNOWN
    assert "dtype key needs colocated.v1.1" in old.details()


def newer_minor(prog: payload_pb2.ProgramPayload) -> payload_pb2.ProgramPayload:
    """The program as a writer of the next minor version might send it: one field this reader
    lacks."""
    prog = payload_pb2.ProgramPayload.FromString(prog.SerializeToString())
    prog.header.minor_version = SCHEMA_MINOR_VERSION + 1
    field_99_varint = bytes([0x98, 0x06, 0x07])  # tag (99 << 3) | 0, value 7
    return payload_pb2.ProgramPayload.FromString(prog.SerializeToString() + field_99_varint)


def test_newer_minor_payload_needs_the_newer_version(mesh):
    prog = newer_minor(program(examples.affine, mesh, *[float_spec(mesh)] * 3))
    newer = SCHEMA_MINOR_VERSION + 1
    with worker(versions=VersionRange(0, newer)) as stub:
        e = refusal(stub, request(prog, X, Y, Y, version=SCHEMA_MINOR_VERSION))
        got = stub.Execute(request(prog, X, Y, Y, version=newer))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    detail = f"minor version {newer} is newer than the agreed {SCHEMA_MINOR_VERSION}"
    assert f"header.minor_version: {detail}" in e.details()
    result = np.frombuffer(got.outputs[0].data, np.float32)
    np.testing.assert_array_equal(result, (X * Y + Y).ravel())


def test_function_errors_reach_the_caller(mesh):
    prog = program(examples.fail, mesh, float_spec(mesh))
    with worker() as stub:
        e = refusal(stub, request(prog, X))
    assert e.code() == grpc.StatusCode.UNKNOWN
    assert e.details().startswith("colocated_wire.examples.fail raised ValueError: fail was called")


def test_inputs_must_be_args_and_kwargs(mesh):
    leaves, treedef = jax.tree_util.tree_flatten([float_spec(mesh)])
    devices = list(mesh.devices.flat)
    data = serialize_program(
        examples.fail, treedef, leaves, None, None, devices, target_minor_version=0
    )
    prog = payload_pb2.ProgramPayload.FromString(data)
    with worker() as stub:
        e = refusal(stub, request(prog, X))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details().startswith("input_specs: the tree must be (args tuple, kwargs dict)")


def test_worker_refuses_an_empty_version_range(monkeypatch, capsys):
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert worker_main(["--min-version", "2", "--max-version", "1"]) == 2
    assert "version range 1.2–1.1 is empty" in capsys.readouterr().err
