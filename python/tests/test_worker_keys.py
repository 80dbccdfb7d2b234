"""PRNG key arrays and float0 over Execute, against a real worker process.

A key array travels as its key data (uint32, little-endian, of shape
`shape + key_shape`), its spec keeping the key dtype; float0 has no bytes.
The worker runs functions of key_functions.py by name, and every result is
compared with the same function run here on the same keys.
"""

import os
import subprocess
import sys
from pathlib import Path

import grpc
import jax
import key_functions
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import deserialize_specs, serialize_program
from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2, service_pb2_grpc

TESTS = Path(__file__).parent
VERSION = 1  # key dtypes and float0 in specs are colocated.v1.1


@pytest.fixture(scope="module")
def stub():
    """A stub for `python -m colocated_wire.worker` running key_functions by name."""
    env = {**os.environ, "XLA_FLAGS": ""}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    args = ["--port", "0", "--devices", "8", "--allow-module", "key_functions"]
    process = subprocess.Popen(
        [sys.executable, "-m", "colocated_wire.worker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        first = process.stdout.readline()
        assert first.startswith("listening on "), first
        with grpc.insecure_channel(first.split()[-1]) as channel:
            yield service_pb2_grpc.ColocatedWorkerServiceStub(channel)
    finally:
        process.terminate()
        process.wait()


@pytest.fixture(scope="module")
def mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def execute(stub, fun, mesh, args, specs):
    """Runs `fun` on `args` (arrays given by `specs`) in the worker: its output tree."""
    leaves, treedef = jax.tree_util.tree_flatten((tuple(specs), {}))
    devices = list(mesh.devices.flat)
    data = serialize_program(fun, treedef, leaves, None, None, devices, target_minor_version=1)
    req = service_pb2.ExecuteRequest(
        version=VERSION, program=payload_pb2.ProgramPayload.FromString(data)
    )
    for a in jax.tree.leaves(args):
        req.inputs.add(data=wire_bytes(a))
    got = stub.Execute(req)
    out_treedef, out_specs = deserialize_specs(got.output_specs.SerializeToString())
    values = [from_wire(s, o.data) for s, o in zip(out_specs, got.outputs, strict=True)]
    return jax.tree_util.tree_unflatten(out_treedef, values), out_specs


def wire_bytes(a) -> bytes:
    """An array's bytes as they travel: a key array's key data; float0 none."""
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
        a = jax.random.key_data(a)
    return np.ascontiguousarray(np.asarray(a)).tobytes()


def from_wire(spec, data: bytes):
    if jax.dtypes.issubdtype(spec.dtype, jax.dtypes.prng_key):
        impl = jax.random.key_impl(jax.random.key(0, impl=spec.dtype._impl.name))
        shape = (*spec.shape, *spec.dtype._impl.key_shape)
        key_data = np.frombuffer(data, np.dtype("<u4")).reshape(shape)
        return jax.random.wrap_key_data(key_data, impl=impl)
    if spec.dtype == jax.dtypes.float0:
        assert data == b""
        return np.zeros(spec.shape, jax.dtypes.float0)
    return np.frombuffer(data, spec.dtype).reshape(spec.shape)


def spec(a, sharding=None):
    return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)


def same_keys(got, want) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(want))


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg", "unsafe_rbg"])
def test_key_arrays_go_in_and_come_out_as_their_key_data(stub, mesh, impl):
    keys = jax.random.split(jax.random.key(7, impl=impl), 8)
    n = np.arange(8, dtype=np.uint32)
    sharded = NamedSharding(mesh, P("x"))
    out, out_specs = execute(
        stub, key_functions.fold_and_draw, mesh, (keys, n), [spec(keys, sharded), spec(n, sharded)]
    )
    want = key_functions.fold_and_draw(keys, n)
    same_keys(out["keys"], want["keys"])
    np.testing.assert_array_equal(out["bits"], want["bits"])
    assert out_specs[1].dtype == keys.dtype  # the key dtype, not its data's
    assert out_specs[1].sharding.spec == P("x")


def test_a_single_key_of_an_impl_with_a_long_key(stub, mesh):
    key = jax.random.key(3, impl="rbg")  # key shape (4,)
    out, _ = execute(stub, key_functions.split_key, mesh, (key,), [spec(key)])
    same_keys(out, key_functions.split_key(key))


def test_float0_has_no_bytes_in_or_out(stub, mesh):
    x = np.arange(6, dtype=np.float32)
    zero = np.zeros((6,), jax.dtypes.float0)
    out, out_specs = execute(
        stub, key_functions.tangent_of_int, mesh, (x, zero), [spec(x), spec(zero)]
    )
    np.testing.assert_array_equal(out["double"], x * 2)
    assert [s.dtype for s in out_specs] == [np.float32, jax.dtypes.float0, jax.dtypes.float0]
    assert out["made"].shape == out["zero"].shape == (6,)


def test_key_data_of_the_wrong_length_is_refused(stub, mesh):
    keys = jax.random.split(jax.random.key(0), 4)
    leaves, treedef = jax.tree_util.tree_flatten(((spec(keys),), {}))
    devices = list(mesh.devices.flat)
    data = serialize_program(
        key_functions.split_key, treedef, leaves, None, None, devices, target_minor_version=1
    )
    req = service_pb2.ExecuteRequest(
        version=VERSION, program=payload_pb2.ProgramPayload.FromString(data)
    )
    req.inputs.add(data=b"\0" * 16)  # 4 keys of 2 words take 32 bytes
    with pytest.raises(grpc.RpcError) as e:
        stub.Execute(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == "inputs[0]: 16 bytes, but a key<fry>[4] input needs 32"
