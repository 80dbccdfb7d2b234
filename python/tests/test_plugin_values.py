"""JAX's `_serialize` / `_deserialize` of values that are not programs or specs, plugin installed.

JAX's own take anything cloudpickle takes; with the plugin they must take the
same: meshes, shardings, dtypes, PRNG impls, functions, the function-and-
specialization tuple before its specs are known. The round trips run with
JAX's functions and with the plugin's (`codec` fixture), called by their
names in `serialization`; what only the plugin promises (colocated.v1 bytes,
shared objects written once, trust, typed errors) runs with the plugin.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.experimental.colocated_python import serialization
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P
from jax_limits import CPU_MEMORY_KINDS, skip_if

from colocated_wire import DecodeError, EncodeError, plugin
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.plugin import PickleNotAllowedError, PluginLiftError

SDS = jax.ShapeDtypeStruct


def add_one(x):
    """A module-level function, sent by name."""
    return x + 1


@pytest.fixture(params=["jax", "colocated_wire"])
def codec(request):
    """JAX's serialization as it ships, or with the plugin installed (trusting pickles)."""
    if request.param == "jax":
        yield request.param
    else:
        with plugin.installed(allow_pickle=True):
            yield request.param


@pytest.fixture
def mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def _round_trip(value, codec):
    """`value` through JAX's names; with the plugin, the bytes are a ValuePayload."""
    data = serialization._serialize(value)
    if codec == "colocated_wire":
        assert payload_pb2.ValuePayload.FromString(data).header.kind == 3
    return serialization._deserialize(data)


def _kind(data: bytes) -> int:
    return payload_pb2.PayloadEnvelope.FromString(data).header.kind


def test_a_mesh(codec, mesh):
    got = _round_trip(mesh, codec)
    assert type(got) is Mesh and got == mesh


def test_a_list_of_named_shardings(codec, mesh):
    value = [
        NamedSharding(mesh, P("x")),
        NamedSharding(mesh, P("y", "x")),
        NamedSharding(mesh, P()),
    ]
    got = _round_trip(value, codec)
    assert type(got) is list and got == value
    assert got[0].mesh is got[1].mesh is got[2].mesh  # one mesh, read once


@skip_if(CPU_MEMORY_KINDS)
def test_a_tuple_of_single_device_shardings_in_pinned_host_memory(codec, devices):
    value = tuple(SingleDeviceSharding(d, memory_kind="pinned_host") for d in devices[:3])
    got = _round_trip(value, codec)
    assert got == value and {s.memory_kind for s in got} == {"pinned_host"}


def test_plain_functions_run_after_the_round_trip(codec):
    def local(a):
        return a * 3

    got = _round_trip((lambda a: a - 1, local, add_one), codec)
    assert [f(5) for f in got] == [4, 15, 6]
    assert got[2] is add_one  # by name with the plugin; by reference in JAX's pickle


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_key_dtypes(codec, impl):
    dtype = jax.random.key(0, impl=impl).dtype
    got = _round_trip(dtype, codec)
    assert got == dtype and str(got) == str(dtype)
    assert jax.random.key(1, impl=got._impl).dtype == dtype


def test_a_prng_impl(codec):
    impl = jax.random.key(0, impl="rbg").dtype._impl
    got = _round_trip(impl, codec)
    assert type(got) is type(impl) and got == impl
    assert jax.random.key_impl(jax.random.key(0, impl=got)) == "rbg"


def test_a_shape_dtype_struct_of_keys(codec, mesh):
    spec = SDS((8,), jax.random.key(0).dtype, sharding=NamedSharding(mesh, P("x")))
    got = _round_trip(spec, codec)
    assert got == spec and got.dtype == spec.dtype and got.sharding == spec.sharding


def test_the_function_and_specialization_tuple_before_its_specs_are_known(codec, devices):
    fun_and_specialization = (add_one, None, None, None, None, None)
    data = serialization._serialize(fun_and_specialization)
    got = serialization._deserialize(data)
    assert got == fun_and_specialization and got[0](1) == 2  # JAX takes [0]
    # The bytes go where JAX's go: into a colocated Python program.
    from jax.extend.ifrt_programs import ifrt_programs

    spec = SDS((1,), np.float32, sharding=SingleDeviceSharding(devices[0]))
    program = ifrt_programs.make_colocated_python_program(
        "add_one", data, [devices[0]], [spec], [spec]
    )
    assert program is not None


def test_two_meshes_are_a_value_not_specs(codec, mesh):
    got = _round_trip((mesh, mesh), codec)
    assert got == (mesh, mesh) and got[0] is got[1]


# ---- what the plugin promises ----------------------------------------------------------------


@pytest.fixture
def installed():
    with plugin.installed(allow_pickle=True):
        yield


def test_programs_and_specs_keep_their_payloads_and_the_rest_is_a_value(installed, devices):
    spec = SDS((2,), np.float32)
    treedef = jax.tree.structure([0])
    program = (add_one, treedef, [spec], None, None, devices[:1])
    assert _kind(serialization._serialize(program)) == payload_pb2.PAYLOAD_KIND_PROGRAM
    assert _kind(serialization._serialize((treedef, [spec]))) == payload_pb2.PAYLOAD_KIND_SPECS
    for value in ((add_one, None, [spec], None, None, None), (treedef, [3]), [spec]):
        data = serialization._serialize(value)
        assert _kind(data) == payload_pb2.PAYLOAD_KIND_VALUE
        assert serialization._deserialize(data) == value


def test_shared_objects_are_written_once(installed, mesh):
    s1, s2 = NamedSharding(mesh, P("x")), NamedSharding(mesh, P("y"))
    one, two, same = ([s1], [s1, s2], [s1, NamedSharding(mesh, P("x"))])
    sizes = {}
    for name, value in (("one", one), ("two", two), ("same", same)):
        data = serialization._serialize(value)
        assert serialization._deserialize(data) == value
        sizes[name] = len(data)
    assert sizes["two"] < 2 * sizes["one"]  # the mesh once
    assert sizes["same"] < sizes["two"]  # an equal sharding once


def test_without_allow_pickle_a_lambda_is_refused_naming_the_option(mesh):
    with plugin.installed():
        with pytest.raises(EncodeError, match=r"allow_pickle=True") as caught:
            serialization._serialize([mesh, lambda a: a])
        assert caught.value.path == "value.leaves[1]"
        # A function by name needs no pickle, and mesh none.
        data = serialization._serialize([mesh, add_one])
    with plugin.installed(allowed_modules={__name__}):
        assert serialization._deserialize(data) == [mesh, add_one]


def test_without_allow_pickle_a_pickled_value_is_not_read(mesh):
    with plugin.installed(allow_pickle=True):
        data = serialization._serialize([mesh, lambda a: a])
    with plugin.installed():
        with pytest.raises(PickleNotAllowedError, match=r"install\(allow_pickle=True\)") as caught:
            serialization._deserialize(data)
    assert str(caught.value).startswith("value.leaves[1].pickled: ")


def test_a_function_by_name_outside_the_allowed_modules_is_a_value_error():
    with plugin.installed(allow_pickle=True):
        data = serialization._serialize([add_one])
    with plugin.installed(allowed_modules={"json"}):
        with pytest.raises(ValueError, match=r"value\.leaves\[0\]\.function: .*not allowed") as e:
            serialization._deserialize(data)
    assert isinstance(e.value, PluginLiftError)


def test_hostile_bytes_are_typed_errors_with_paths(installed, mesh):
    data = serialization._serialize([mesh, NamedSharding(mesh, P("x"))])
    with pytest.raises(DecodeError) as caught:
        serialization._deserialize(data[: len(data) - 3])
    assert caught.value.code == "malformed"
    msg = payload_pb2.ValuePayload.FromString(data)
    msg.value.leaves[1].entry = 40
    with pytest.raises(DecodeError) as caught:
        serialization._deserialize(msg.SerializeToString())
    assert (caught.value.path, caught.value.code) == (
        "value.leaves[1].entry",
        "reference-out-of-range",
    )
    msg.value.leaves[1].entry = 2
    msg.value.leaves.add().entry = 0  # a leaf the tree does not have
    with pytest.raises(DecodeError) as caught:
        serialization._deserialize(msg.SerializeToString())
    assert (caught.value.path, caught.value.code) == ("value.leaves", "invalid-tree")


def test_a_device_this_process_lacks_is_a_value_error(installed, mesh, devices):
    msg = payload_pb2.ValuePayload.FromString(serialization._serialize(mesh))
    ids = msg.table.entries[0].device_list
    ids.ClearField("iota")
    ids.plain.ids.extend([len(devices) + 4000 + i for i in range(8)])
    with pytest.raises(ValueError, match=str(len(devices) + 4000)) as caught:
        serialization._deserialize(msg.SerializeToString())
    assert isinstance(caught.value, PluginLiftError)


def test_the_reader_is_chosen_by_the_header_wherever_it_is(installed, mesh):
    data = serialization._serialize([mesh])
    header_first = payload_pb2.ValuePayload.FromString(data)
    header = header_first.header.SerializeToString()
    header_first.ClearField("header")
    header_last = header_first.SerializeToString() + b"\x0a" + bytes([len(header)]) + header
    assert serialization._deserialize(header_last) == [mesh]
    with pytest.raises(DecodeError) as caught:
        serialization._deserialize(header_first.SerializeToString())  # no header at all
    assert (caught.value.path, caught.value.code) == ("header", "unsupported-version")
