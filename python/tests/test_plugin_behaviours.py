"""What colocated_python promises its users, held with JAX's serialization and with the plugin.

Each test runs twice through test_plugin's `wire` fixture: once as JAX ships, once with
colocated_wire.plugin installed. They are the behaviours JAX's own colocated_python tests
check (specialization, ordering, concurrency, device order, module state, colocated
objects), written for this project: the plugin must change none of them.
"""

from __future__ import annotations

import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import colocated_python as cp
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jax_limits import COLOCATED_OBJECTS, METHODS_OUTLIVE_THEIR_OBJECT, skip_if
from test_plugin import _assert_same, wire, x  # noqa: F401 (fixtures)

# State the colocated functions below keep in this module, as user code keeps caches.
STATE: dict[str, object] = {}

NO_DEVICES = "No devices found. colocated_python function without input arguments"


def add_one(a):
    return jax.tree.map(lambda leaf: leaf + 1, a)


def make_zero():
    return jnp.array(0)


def record(a, label):
    STATE.setdefault("order", []).append(label)
    return a


def first(a):
    return record(a, "first")


def second(a):
    return record(a, "second")


def third(a):
    return record(a, "third")


def meet(a):
    STATE["barrier"].wait(timeout=60)  # breaks, and fails the call, unless all three meet
    return a


def remember(a):
    STATE["remembered"] = np.asarray(a)
    return a + 1


def recall(a):
    del a
    return jax.device_put(STATE["remembered"], jax.devices()[0])


def swap_shards(a, b):
    shards = [
        a.addressable_shards[1].data + b.addressable_shards[0].data,
        a.addressable_shards[0].data + b.addressable_shards[1].data,
    ]
    return jax.make_array_from_single_device_arrays(b.shape, b.sharding, shards)


class Lifecycle:
    """A colocated object that says when the worker builds and drops it."""

    def __init__(self):
        STATE["built"] = STATE.get("built", 0) + 1

    def __del__(self):
        STATE["dropped"] = STATE.get("dropped", 0) + 1

    def echo(self, a):
        return a


class Fetcher:
    """A colocated object whose methods take no inputs, so need devices to run on."""

    def __init__(self, sharding):
        self.sharding = sharding

    def fetch(self):
        return jax.device_put(np.array(7, np.int32), self.sharding)


@pytest.fixture(autouse=True)
def clean_state():
    STATE.clear()
    yield
    STATE.clear()


def test_a_function_of_no_inputs_needs_devices(wire):  # noqa: F811
    with pytest.raises(ValueError, match=NO_DEVICES):
        cp.colocated_python(make_zero)()
    f = cp.colocated_python(make_zero).specialize(devices=jax.devices()[:1])
    for _ in range(2):
        assert int(f()) == 0
    wire.check(programs=3, carriers=1)  # specialized once, for both calls


def test_a_new_input_structure_specializes_again(wire, x):  # noqa: F811
    f = cp.colocated_python(add_one)
    tree = [x, (x * 2, {"v": x * 3})]
    for a in (x, x, tree, tree):
        _assert_same(f(a), add_one(a))
    wire.check(programs=6, carriers=2)  # two structures: two specializations, no more


def test_given_output_specs_any_input_structure_runs_without_carriers(wire, x):  # noqa: F811
    f = cp.colocated_python(add_one).specialize(out_specs_fn=lambda a: a)
    tree = [x, (x * 2, {"v": x * 3})]
    for a in (x, x, tree, tree):
        _assert_same(f(a), add_one(a))
    wire.check(programs=2, carriers=0)  # one program per structure


@pytest.mark.parametrize("on_main_thread", [True, False])
def test_calls_from_one_thread_run_in_order(wire, x, on_main_thread):  # noqa: F811
    fs = [cp.colocated_python(g).specialize(out_specs_fn=lambda a: a) for g in (first, second)]
    last = cp.colocated_python(third).specialize(out_specs_fn=lambda a: a)

    def calls():
        for f in fs:
            f(x)  # dispatched without waiting
        jax.block_until_ready(last(x))

    if on_main_thread:
        calls()
    else:
        t = threading.Thread(target=calls)
        t.start()
        t.join()
    assert STATE["order"] == ["first", "second", "third"]


def test_calls_from_several_threads_run_at_once(wire, x):  # noqa: F811
    STATE["barrier"] = threading.Barrier(3)
    f = cp.colocated_python(meet).specialize(out_specs_fn=lambda a: a)
    failures: list[BaseException] = []

    def call():
        try:
            jax.block_until_ready(f(x))
        except BaseException as e:  # a broken barrier: the calls ran one after another
            failures.append(e)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_inputs_on_meshes_of_different_device_orders(wire):  # noqa: F811
    d0, d1 = jax.devices()[:2]
    forward = NamedSharding(Mesh([d0, d1], "x"), PartitionSpec("x"))
    backward = NamedSharding(Mesh([d1, d0], "x"), PartitionSpec("x"))
    f = cp.colocated_python(swap_shards).specialize(devices=[d0, d1])
    a = jax.device_put(np.array([0, 2]), forward)
    b = jax.device_put(np.array([4, 8]), backward)
    out = f(a, b)
    assert out.sharding == backward
    assert [s.device for s in out.addressable_shards] == [d1, d0]
    np.testing.assert_array_equal(np.asarray(out), [2 + 4, 0 + 8])


def test_module_state_is_shared_and_the_module_never_pickled(wire, x):  # noqa: F811
    with tempfile.TemporaryFile() as unpicklable:
        STATE["file"] = unpicklable  # a function that pickled this module would fail here
        jax.block_until_ready(cp.colocated_python(remember)(x))
        out = cp.colocated_python(recall)(x * 5)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x))


@skip_if(COLOCATED_OBJECTS)
def test_a_colocated_object_is_built_on_first_use_and_dropped_with_its_handle(wire, x):  # noqa: F811
    remote_class = cp.colocated_python_class(Lifecycle)
    unused = remote_class()
    del unused
    assert "built" not in STATE and "dropped" not in STATE  # never used: never built
    obj = remote_class()
    jax.block_until_ready(obj.echo(x))
    assert STATE.get("built") == 1 and "dropped" not in STATE
    del obj
    assert STATE.get("dropped") == 1


@skip_if(COLOCATED_OBJECTS)
def test_a_method_of_no_inputs_needs_devices(wire):  # noqa: F811
    devices = jax.devices()[:1]
    sharding = jax.sharding.SingleDeviceSharding(devices[0])
    obj = cp.colocated_python_class(Fetcher)(sharding)
    with pytest.raises(ValueError, match=NO_DEVICES):
        jax.block_until_ready(obj.fetch())
    obj.fetch = obj.fetch.specialize(devices=devices)
    assert int(obj.fetch()) == 7
    spec = jax.ShapeDtypeStruct((), np.int32, sharding=sharding)
    fetcher = cp.colocated_python_class(Fetcher)(sharding)
    fetch = fetcher.fetch.specialize(devices=devices, out_specs_fn=lambda: spec)
    if METHODS_OUTLIVE_THEIR_OBJECT is None:  # JAX 0.9 on: the method alone keeps working
        del fetcher
    assert int(fetch()) == 7
