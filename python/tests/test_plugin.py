"""Real colocated Python programs, with JAX's own serialization and with colocated_wire.plugin.

On CPU, JAX runs a colocated function in-process after reading back the
payload it wrote (`_deserialize(bytes)[0]`), so every payload of a call is
written and read here. The `wire` fixture runs each test twice, without and
with the plugin, and records what went through JAX's serialization names;
`wire.check` asserts how many payloads a call made (the same count both
ways) and that they are pickles without the plugin and colocated.v1 with it.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import colocated_python as cp
from jax.experimental.colocated_python import func, serialization
from jax.sharding import NamedSharding, PartitionSpec
from jax_limits import CPU_DEVICE_ERRORS, CPU_ROUND_TRIP, PRNG_KEYS, skip_if

from colocated_wire import (
    EncodeError,
    LiftError,
    Program,
    deserialize_program,
    deserialize_specs,
    plugin,
    serialize_program,
)
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.functions import ANY_MODULE
from colocated_wire.plugin import PickleNotAllowedError, PluginLiftError

_NAMES = ("_serialize", "_deserialize", "_serialize_specs", "_deserialize_specs")
_PICKLE = b"\x80"  # the first byte of a pickle of protocol 2 or later


class Payloads:
    """What one test's colocated calls wrote and read through JAX's serialization names."""

    def __init__(self, backend: str):
        self.backend = backend
        self.programs: list[bytes] = []
        self.carriers: list[bytes] = []
        self.reads = 0

    def check(self, programs: int | None, carriers: int | None) -> None:
        """The calls made these many payloads (None: some), each in the backend's format."""
        if programs is None:
            assert self.programs
        else:
            assert (len(self.programs), len(self.carriers)) == (programs, carriers)
        assert self.reads == len(self.programs)  # on CPU, each program is read back once
        for data in self.programs + self.carriers:
            assert (data[:1] == _PICKLE) == (self.backend == "jax")
        if self.backend == "colocated_wire":
            # The plugin trusts pickles here (its trees may hold some, test_plugin_pytrees.py).
            for data in self.programs:
                program = deserialize_program(data, allow_pickle=True, allowed_modules=ANY_MODULE)
                assert isinstance(program, Program)
            for data in self.carriers:
                deserialize_specs(data, allow_pickle=True)


# The spies are module-level: a pickled closure that calls `_serialize_specs` holds it
# by reference then, and a recording reaches this process's `_recording`, not a copy.
_recording: Payloads | None = None
_saved: dict[str, object] = {}


def spy_serialize(obj):
    data = _saved["_serialize"](obj)
    _recording.programs.append(data)
    return data


def spy_deserialize(data):
    _recording.reads += 1
    return _saved["_deserialize"](data)


def spy_serialize_specs(treedef, leaves, devices):
    carrier = _saved["_serialize_specs"](treedef, leaves, devices)
    text = carrier.addressable_shards[0].data.item()
    _recording.carriers.append(base64.b64decode(text.encode("ascii")))
    return carrier


_SPIES = {
    "_serialize": spy_serialize,
    "_deserialize": spy_deserialize,
    "_serialize_specs": spy_serialize_specs,
}


@pytest.fixture(params=["jax", "colocated_wire"])
def wire(request):
    if CPU_ROUND_TRIP is not None:
        pytest.skip(CPU_ROUND_TRIP)
    if request.param == "colocated_wire":
        plugin.install(allow_pickle=True)
    global _recording
    _recording = Payloads(request.param)
    _saved.update({name: getattr(func, name) for name in _SPIES})
    for name, spy in _SPIES.items():
        setattr(func, name, spy)
    try:
        yield _recording
    finally:
        for name, value in _saved.items():
            setattr(func, name, value)
        _saved.clear()
        _recording = None
        plugin.uninstall()


@pytest.fixture
def x(devices):
    return jax.device_put(jnp.arange(4.0), devices[0])


def _spec(a) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding)


def _assert_same(got, want) -> None:
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.dtype == w.dtype and g.sharding == w.sharding
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# Module-level, so that a function travels by name and a node type is found by name.
def add_one(a):
    return a + 1


def fail(a):
    raise ValueError("boom inside the colocated function")


def split_key(key):
    return jax.random.split(key)


def key_pytree(tree):
    keys = tree["keys"]
    return {
        "same": keys,
        "fresh": jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys),
        "bits": jax.vmap(lambda k: jax.random.bits(k, (2,)))(keys)
        + tree["n"][:, None].astype(np.uint32),
    }


def make_ones():
    return jnp.ones((3,), jnp.int32)


Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Pair:
    a: object
    b: object
    tag: str


jax.tree_util.register_dataclass(Pair, data_fields=["a", "b"], meta_fields=["tag"])


@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, items, label):
        self.items, self.label = items, label

    def tree_flatten(self):
        return (self.items,), self.label

    @classmethod
    def tree_unflatten(cls, label, children):
        return cls(children[0], label)


class Counter:
    def __init__(self, start):
        self.total = start

    def add(self, a):
        self.total += 1
        return a + self.total


def test_a_plain_function_discovers_its_output_specs_once(wire, x):
    f = cp.colocated_python(add_one)
    _assert_same(f(x), x + 1)
    _assert_same(f(x * 2), x * 2 + 1)
    # output specs and push, the call itself, pop: three programs; one carrier of output specs.
    wire.check(programs=3, carriers=1)
    if wire.backend == "colocated_wire":
        treedef, leaves = deserialize_specs(wire.carriers[0])
        assert treedef == jax.tree.structure(x) and leaves == (_spec(x),)


def test_specialize_with_in_specs_out_specs_fn_and_devices(wire, x, devices):
    f = cp.colocated_python(add_one).specialize(
        in_specs=((_spec(x),), {}), out_specs_fn=lambda a: a, devices=devices[:1]
    )
    _assert_same(f(x), x + 1)
    wire.check(programs=1, carriers=0)
    if wire.backend == "colocated_wire":
        program = deserialize_program(wire.programs[0], allowed_modules={__name__})
        assert program.fun is add_one  # by name: nothing pickled
        assert program.in_leaves == (_spec(x),) and program.out_leaves == (_spec(x),)


def test_a_function_of_no_inputs_is_sent_to_the_devices_it_is_given(wire, devices):
    out = jax.ShapeDtypeStruct(
        (3,), jnp.int32, sharding=jax.sharding.SingleDeviceSharding(devices[5])
    )
    f = cp.colocated_python(make_ones).specialize(out_specs_fn=lambda: out, devices=devices[5:6])
    np.testing.assert_array_equal(np.asarray(f()), np.ones(3, np.int32))
    wire.check(programs=1, carriers=0)
    if wire.backend == "colocated_wire":
        program = deserialize_program(wire.programs[0], allowed_modules={__name__})
        assert list(program.devices) == [devices[5]] and program.out_leaves == (out,)


def test_pytrees_of_every_node_kind_go_in_and_come_out(wire, x):
    tree = {
        "tuple": (x, x),
        "list": [x],
        "none": None,
        "namedtuple": Point(x, [x]),
        "dataclass": Pair(x, x, "meta"),
        "custom": Box([x, (x,)], "box"),
        "empty": ((), [], {}, Point((), ())),
        "nested": {"a": [{"b": (x,)}]},
        "int_keys": {0: x, 1: [x], -7: None},
        "bool_and_none_keys": ({True: x, False: x}, {None: x}),
        "ordered": collections.OrderedDict([("b", x), (2, x), ("a", {})]),
        "default": collections.defaultdict(list, {"y": x, "x": collections.defaultdict(None)}),
        "empty_dicts": (collections.OrderedDict(), collections.defaultdict(dict)),
    }
    f = cp.colocated_python(lambda t, *, k: jax.tree.map(add_one, (t, k)))
    _assert_same(f(tree, k={3: x}), jax.tree.map(add_one, (tree, {3: x})))
    wire.check(programs=3, carriers=1)


def test_dict_nodes_come_out_as_the_types_they_went_in(wire, x):
    f = cp.colocated_python(
        lambda a: (
            {2: a, 1: a},
            collections.OrderedDict([("z", a), (0, a)]),
            collections.defaultdict(list, {"k": a}),
        )
    )
    ints, ordered, default = f(x)
    assert list(ints) == [1, 2]
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["z", 0]
    assert type(default) is collections.defaultdict and default.default_factory is list
    assert default["missing"] == []
    wire.check(programs=3, carriers=1)
    if wire.backend == "colocated_wire":
        treedef, _ = deserialize_specs(wire.carriers[0])
        assert treedef == jax.tree.structure(f(x))


def test_empty_outputs(wire, x):
    f = cp.colocated_python(lambda a: (None, (), {"e": []}))
    assert f(x) == (None, (), {"e": []})
    wire.check(programs=3, carriers=1)


def test_string_arrays(wire, devices):
    text = np.array(["colocated", "wire", ""], dtype=np.dtypes.StringDType())
    s = jax.device_put(text, devices[0])
    f = cp.colocated_python(
        lambda a: {"same": a, "upper": jax.device_put(np.strings.upper(np.asarray(a)), a.sharding)}
    )
    out = f(s)
    assert out["same"].dtype == np.dtypes.StringDType()
    assert list(np.asarray(out["upper"])) == ["COLOCATED", "WIRE", ""]
    wire.check(programs=3, carriers=1)


def test_captured_meshes_and_shardings_travel_through_the_table(wire, devices):
    mesh = jax.sharding.Mesh(np.array(devices[:8]).reshape(2, 4), ("a", "b"))
    rows = NamedSharding(mesh, PartitionSpec("a"))
    cols = NamedSharding(mesh, PartitionSpec(None, "b"))
    single = jax.sharding.SingleDeviceSharding(devices[9])
    device_list = mesh._internal_device_list
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), rows)

    def reshard(a):
        assert a.sharding.mesh == mesh  # the captured mesh, read back, equals the input's
        assert list(device_list) == list(mesh.devices.flat)
        return jax.device_put(a * 2, cols), jax.device_put(a[0], single)

    f = cp.colocated_python(reshard)
    out, first_row = f(x)
    assert out.sharding == cols and first_row.sharding == single
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) * 2)
    np.testing.assert_array_equal(np.asarray(first_row), np.asarray(x)[0])
    wire.check(programs=3, carriers=1)
    if wire.backend == "colocated_wire":
        # Unread (allow_pickle=False), the pickled function shows what it refers to in the table.
        shared = deserialize_program(wire.programs[0]).fun.shared
        assert all(obj in shared for obj in (mesh, cols, single, device_list))


def test_a_colocated_class_keeps_its_state(wire, x):
    remote = cp.colocated_python_class(Counter)(10)
    _assert_same(remote.add(x), x + 11)
    _assert_same(remote.add(x), x + 12)
    wire.check(programs=None, carriers=None)


def test_an_error_inside_the_function_reaches_the_caller(wire, x):
    f = cp.colocated_python(fail)
    with pytest.raises(ValueError, match="boom inside the colocated function"):
        f(x)
    wire.check(programs=1, carriers=0)


def test_calls_from_many_threads(wire, devices):
    f = cp.colocated_python(add_one)
    inputs = [jax.device_put(jnp.full((4,), float(i)), devices[0]) for i in range(8)]
    results = [None] * len(inputs)

    def call(i):
        results[i] = f(inputs[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, a in zip(results, inputs, strict=True):
        _assert_same(got, a + 1)
    wire.check(programs=3, carriers=1)  # one specialization, whichever thread came first


@skip_if(PRNG_KEYS)
def test_prng_keys_with_output_specs_given(wire, devices):
    # JAX sends keys in their physical uint32 form in a program, so they need no key dtype.
    key = jax.device_put(jax.random.key(0), devices[0])
    f = cp.colocated_python(split_key).specialize(
        out_specs_fn=lambda k: jax.ShapeDtypeStruct((2,), k.dtype, sharding=k.sharding)
    )
    out = f(key)
    assert out.dtype == key.dtype
    np.testing.assert_array_equal(jax.random.key_data(out), jax.random.key_data(split_key(key)))
    wire.check(programs=1, carriers=0)


@skip_if(PRNG_KEYS)
def test_prng_keys_in_discovered_output_specs(wire, devices):
    # Output specs keep the key dtype: the carrier writes it as a key of schema 1.1.
    key = jax.device_put(jax.random.key(0), devices[0])
    f = cp.colocated_python(split_key)
    out = f(key)
    assert out.dtype == key.dtype
    np.testing.assert_array_equal(jax.random.key_data(out), jax.random.key_data(split_key(key)))
    np.testing.assert_array_equal(jax.random.key_data(f(key)), jax.random.key_data(out))
    wire.check(programs=3, carriers=1)  # as in test_a_plain_function_discovers_its_output_specs


@skip_if(PRNG_KEYS)
@pytest.mark.parametrize("impl", ["threefry2x32", "rbg", "unsafe_rbg"])
def test_prng_keys_of_every_impl_go_in_and_come_out(wire, devices, impl):
    keys = jax.device_put(jax.random.split(jax.random.key(7, impl=impl), 3), devices[0])
    out = cp.colocated_python(key_pytree)({"keys": keys, "n": jnp.arange(3)})
    assert out["fresh"].dtype == keys.dtype and out["same"].dtype == keys.dtype
    assert jax.random.key_impl(out["fresh"]) == impl
    np.testing.assert_array_equal(jax.random.key_data(out["same"]), jax.random.key_data(keys))
    want = key_pytree({"keys": keys, "n": jnp.arange(3)})
    fresh = jax.random.key_data(want["fresh"])
    np.testing.assert_array_equal(jax.random.key_data(out["fresh"]), fresh)
    np.testing.assert_array_equal(out["bits"], want["bits"])
    wire.check(programs=3, carriers=1)


@skip_if(PRNG_KEYS)
def test_key_output_specs_travel_in_the_carrier_as_keys(wire, devices):
    key = jax.device_put(jax.random.key(0, impl="rbg"), devices[0])
    cp.colocated_python(split_key)(key)
    if wire.backend == "colocated_wire":
        (carrier,) = wire.carriers
        _, (leaf,) = deserialize_specs(carrier)
        assert leaf.dtype == key.dtype and leaf.shape == (2,)
        leaf_msg = payload_pb2.SpecsPayload.FromString(carrier).table.entries[-1].array_spec
        assert (leaf_msg.key_type.impl, list(leaf_msg.key_type.key_shape)) == ("rbg", [4])


def test_what_does_not_pickle_is_a_type_error(wire, x):
    lock = threading.Lock()

    def locked(a):
        with lock:
            return a + 1

    with pytest.raises(TypeError, match="lock") as caught:
        cp.colocated_python(locked)(x)
    if wire.backend == "colocated_wire":
        assert isinstance(caught.value, EncodeError) and caught.value.path == "function"


class Unpicklable:
    """A dict key JAX accepts that has no wire form and does not pickle either."""

    def __reduce__(self):
        raise TypeError("this key does not pickle")

    def __hash__(self):
        return 0


def test_a_value_colocated_wire_cannot_write_is_an_encode_error_with_a_path(x):
    f = cp.colocated_python(lambda a: {Unpicklable(): a})
    with plugin.installed(allow_pickle=True):
        with pytest.raises(EncodeError, match="cannot be pickled") as caught:
            f(x)
    assert caught.value.path == "specs.treedef.kinds[0]"


def test_a_default_factory_without_a_name_is_an_encode_error_at_its_node(x):
    tree = [x, collections.defaultdict(lambda: 0, {"a": x})]
    f = cp.colocated_python(lambda t: t[0])
    with plugin.installed():  # pickles not trusted (with them, it travels pickled)
        with pytest.raises(EncodeError, match="no importable name") as caught:
            f(tree)
    # Input specs are ((t,), {}): tuple, tuple, list, leaf, then the defaultdict.
    assert caught.value.path == "input_specs.treedef.kinds[4]"
    _assert_same(cp.colocated_python(lambda t: t[0])(tree), x)  # JAX's pickle writes it


@skip_if(CPU_ROUND_TRIP)
def test_without_allow_pickle_only_functions_by_name_run(x):
    with plugin.installed(allowed_modules={add_one.__module__}):
        with pytest.raises(PickleNotAllowedError, match=r"install\(allow_pickle=True\)"):
            cp.colocated_python(add_one)(x)
        by_name = cp.colocated_python(add_one).specialize(out_specs_fn=lambda a: a)
        _assert_same(by_name(x), x + 1)
    with plugin.installed(allowed_modules={"json"}):
        # A module outside allowed_modules: JAX's type for a fault in reading a payload.
        with pytest.raises(ValueError, match="not allowed") as caught:
            cp.colocated_python(add_one).specialize(out_specs_fn=lambda a: a)(x)
        assert isinstance(caught.value, LiftError)


def test_a_device_this_process_lacks_is_a_value_error(devices):
    from colocated_wire._gen.colocated.v1 import payload_pb2

    treedef = jax.tree.structure(((), {}))
    msg = payload_pb2.ProgramPayload.FromString(
        serialize_program(add_one, treedef, (), None, None, devices[:1])
    )
    ids = msg.table.entries[msg.devices].device_list
    ids.ClearField("ids")
    ids.plain.ids.append(len(devices) + 4000)
    data = msg.SerializeToString()
    if CPU_DEVICE_ERRORS is None:  # JAX's own error for it is a ValueError
        with pytest.raises(ValueError, match="Invalid device ID") as jax_says:
            serialization._lookup_cpu_device({}, len(devices) + 4000)
        assert type(jax_says.value) is ValueError
    with plugin.installed():
        with pytest.raises(ValueError) as caught:
            serialization._deserialize(data)  # func imports it too from JAX 0.8
    assert isinstance(caught.value, PluginLiftError) and isinstance(caught.value, LiftError)
    assert str(len(devices) + 4000) in str(caught.value)


def test_install_twice_and_uninstall_twice_are_harmless():
    # func.py imports _deserialize only from JAX 0.8 (jax_compat/colocated_python.py).
    modules = (func, serialization)
    originals = {(m, n): getattr(m, n) for m in modules for n in _NAMES if hasattr(m, n)}
    plugin.install()
    plugin.install(allow_pickle=True)
    assert plugin.is_installed()
    replaced = {key: getattr(*key) for key in originals}
    assert all(replaced[key] is not originals[key] for key in originals)
    assert replaced[(func, "_serialize")] is replaced[(serialization, "_serialize")]
    with plugin.installed():  # inside an installed block: back to the outer options after
        pass
    assert plugin.is_installed()
    plugin.uninstall()
    plugin.uninstall()
    assert not plugin.is_installed()
    assert all(getattr(*key) is value for key, value in originals.items())
    with plugin.installed():
        assert plugin.is_installed()
    assert all(getattr(*key) is value for key, value in originals.items())


@skip_if(CPU_ROUND_TRIP)
def test_allow_pickle_is_restored_after_a_nested_block(x):
    with plugin.installed(allow_pickle=True):
        with plugin.installed():
            with pytest.raises(PickleNotAllowedError):
                cp.colocated_python(add_one)(x)
        _assert_same(cp.colocated_python(add_one)(x), x + 1)


@pytest.mark.parametrize("version", ["0.4.37", "0.11.0", "1.0.0", "dev"])
def test_a_jax_outside_the_supported_range_is_refused_by_name(monkeypatch, version):
    monkeypatch.setattr(jax, "__version__", version)
    with pytest.raises(
        RuntimeError, match=rf"supports jax >=0\.4\.38,<0\.11, and this is jax {version}"
    ):
        plugin.install()
    assert not plugin.is_installed() and func._serialize is serialization._serialize


def test_the_carrier_is_the_one_jax_expects(devices):
    ds = jax.sharding.Mesh(np.array(devices[:4]), ("d",))._internal_device_list
    spec = serialization._make_specs_for_serialized_specs(ds)
    treedef = jax.tree.structure({"a": 0})
    leaves = (jax.ShapeDtypeStruct((2,), jnp.float32),)
    with plugin.installed():
        carrier = func._serialize_specs(treedef, leaves, ds)
        assert func._deserialize_specs(carrier) == (treedef, leaves)
    assert jax.tree.map(_spec, carrier) == spec  # JAX 0.4.38's is a pair of arrays
