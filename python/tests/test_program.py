"""serialize_program / deserialize_program: by name, pickled, and pickle safety."""

import functools

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import (
    FunctionNotAvailableError,
    LiftError,
    UnloadedFunction,
    deserialize_program,
    serialize_program,
)
from colocated_wire._gen.colocated.v1 import payload_pb2

SDS = jax.ShapeDtypeStruct


def module_level_fn(x):
    return x


def specs(mesh):
    leaves = [SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x")))]
    return jax.tree_util.tree_structure([0]), leaves


def test_function_by_name(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    devs = xc.DeviceList(tuple(devices[:8]))
    data = serialize_program(module_level_fn, td, leaves, td, leaves, devs)
    msg = payload_pb2.ProgramPayload.FromString(data)
    assert msg.function.by_name.module == __name__
    assert msg.function.by_name.qualname == "module_level_fn"
    # devices first, then the input leaves: the mesh reuses the devices' list.
    assert msg.devices == 0
    assert [e.WhichOneof("kind") for e in msg.table.entries] == [
        "device_list",
        "mesh",
        "named_sharding",
        "array_spec",
    ]
    prog = deserialize_program(data, allowed_modules={__name__})
    assert prog.fun is module_level_fn
    assert prog.in_treedef == td and list(prog.in_leaves) == leaves
    assert prog.out_leaves[0] is prog.in_leaves[0]
    assert isinstance(prog.devices, xc.DeviceList) and prog.devices == devs
    assert prog.in_leaves[0].sharding.mesh._internal_device_list == prog.devices


def test_allowed_modules(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    data = serialize_program(module_level_fn, td, leaves, None, None, devices[:8])
    assert deserialize_program(data, allowed_modules={__name__}).fun is module_level_fn
    with pytest.raises(LiftError, match="not allowed"):
        deserialize_program(data, allowed_modules={"somewhere.else"})


def test_a_name_cannot_reach_past_its_allowed_module(mesh_2x4, devices):
    # json imports codecs, so json.codecs.open is codecs.open: not a function of json.
    td, leaves = specs(mesh_2x4)
    msg = payload_pb2.ProgramPayload.FromString(
        serialize_program(module_level_fn, td, leaves, None, None, devices[:8])
    )
    msg.function.by_name.module, msg.function.by_name.qualname = "json", "codecs.open"
    with pytest.raises(LiftError, match="not defined there"):
        deserialize_program(msg.SerializeToString(), allowed_modules={"json"})


def test_output_specs_absent(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    data = serialize_program(module_level_fn, td, leaves, None, None, devices[:8])
    assert not payload_pb2.ProgramPayload.FromString(data).HasField("output_specs")
    prog = deserialize_program(data, allowed_functions={f"{__name__}.module_level_fn"})
    assert prog.out_treedef is None and prog.out_leaves is None


def test_closure_is_pickled_and_needs_allow_pickle(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    offset = 3
    data = serialize_program(lambda x: x + offset, td, leaves, None, None, devices[:8])
    msg = payload_pb2.ProgramPayload.FromString(data)
    assert msg.function.WhichOneof("function") == "pickled"
    prog = deserialize_program(data)
    assert isinstance(prog.fun, UnloadedFunction)
    assert prog.in_leaves[0].shape == (8, 4)  # the rest of the payload is readable
    with pytest.raises(FunctionNotAvailableError, match="allow_pickle"):
        prog.fun(1)
    assert deserialize_program(data, allow_pickle=True).fun(1) == 4


def test_partial_is_pickled(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    fun = functools.partial(module_level_fn)
    data = serialize_program(fun, td, leaves, None, None, devices[:8])
    assert deserialize_program(data, allow_pickle=True).fun(5) == 5


class _Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_write_file, (self.path,))


def _write_file(path):
    with open(path, "w") as f:
        f.write("pwned")
    return lambda x: x


def test_malicious_pickle_does_not_run_by_default(mesh_2x4, devices, tmp_path):
    td, leaves = specs(mesh_2x4)
    target = tmp_path / "pwned"
    exploit = _Exploit(str(target))
    data = serialize_program(lambda x: exploit, td, leaves, None, None, devices[:8])
    prog = deserialize_program(data)
    assert not target.exists()
    assert isinstance(prog.fun, UnloadedFunction)
    deserialize_program(data, allow_pickle=True)
    assert target.read_text() == "pwned"  # proves the pickle would have run code


def test_closure_capturing_a_mesh_does_not_repeat_it(devices):
    mesh = Mesh(np.array(devices[:64])[::-1].reshape(8, 8), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))

    def fun(x):
        return (mesh, sharding, x)

    td, leaves = jax.tree_util.tree_structure([0]), [SDS((8, 8), jnp.float32, sharding=sharding)]
    data = serialize_program(fun, td, leaves, None, None, devices[:64])
    msg = payload_pb2.ProgramPayload.FromString(data)
    kinds = [e.WhichOneof("kind") for e in msg.table.entries]
    assert kinds.count("mesh") == 1 and kinds.count("named_sharding") == 1
    refs = list(msg.function.pickled.refs)
    assert [kinds[r] for r in refs] == ["mesh", "named_sharding"]
    assert b"CpuDevice" not in msg.function.pickled.pickle
    assert b"Mesh" not in msg.function.pickled.pickle
    prog = deserialize_program(data, allow_pickle=True)
    got_mesh, got_sharding, _ = prog.fun(0)
    assert got_sharding is prog.in_leaves[0].sharding  # the same instance as the specs
    assert got_mesh is prog.in_leaves[0].sharding.mesh
    assert got_mesh == mesh


def test_canonical_program_bytes(mesh_2x4, devices):
    td, leaves = specs(mesh_2x4)
    a = serialize_program(module_level_fn, td, leaves, td, leaves, devices[:8])
    b = serialize_program(module_level_fn, td, list(leaves), td, leaves, tuple(devices[:8]))
    assert a == b
