"""`install(explain=True)`: real colocated functions specialized again, and the one record each
re-specialization logs on the `colocated_wire` logger (plugin/explain.py)."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import colocated_python as cp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from colocated_wire import plugin
from colocated_wire.diff import nearest as diff_nearest
from colocated_wire.plugin import codec as plugin_codec
from colocated_wire.plugin import explain as plugin_explain


def add_one(a):
    return jax.tree.map(lambda leaf: leaf + 1, a)


def double(a):
    return jax.tree.map(lambda leaf: leaf * 2, a)


@pytest.fixture(scope="module")
def mesh(devices):
    return Mesh(np.array(devices[:2]), ("x",))


def put(mesh, value, spec=None):
    return jax.device_put(value, NamedSharding(mesh, PartitionSpec("x") if spec is None else spec))


@pytest.fixture
def records(caplog):
    """The records of the `colocated_wire` logger, as a list that fills as the test runs."""
    caplog.set_level(logging.WARNING, logger="colocated_wire")

    class Records:
        def __call__(self):
            return [r for r in caplog.records if r.name == "colocated_wire"]

    return Records()


@pytest.fixture(autouse=True)
def fresh_caches():
    """Before JAX 0.8 one cache holds every callable's specializations: another test's would
    be hits here."""
    jax.clear_caches()


@pytest.fixture
def explained():
    with plugin.installed(allow_pickle=True, explain=True):
        yield


def the_record(records) -> str:
    got = records()
    assert len(got) == 1, [r.getMessage() for r in got]
    assert got[0].levelno == logging.WARNING
    return got[0].getMessage()


def test_the_first_specialization_and_calls_that_hit_log_nothing(explained, mesh, records):
    f = cp.colocated_python(add_one)
    x = put(mesh, jnp.arange(4.0))
    for _ in range(3):
        f(x)
    assert records() == []


def test_a_sharding_change_names_the_function_and_the_partition_spec(explained, mesh, records):
    f = cp.colocated_python(add_one)
    f(put(mesh, jnp.arange(4.0)))
    f(put(mesh, jnp.arange(4.0), PartitionSpec()))
    text = the_record(records)
    assert text.split("\n") == [
        "colocated_python specialized test_plugin_explain.add_one again: specialization 1 and"
        " specialization 2 differ: 1 leaf in 1 group",
        "  1 leaf at input[0][0]: sharding #2 to #2, PartitionSpec('x',) to ()",
    ]


def test_a_dtype_change(explained, mesh, records):
    f = cp.colocated_python(add_one)
    f(put(mesh, jnp.arange(4.0)))
    f(put(mesh, jnp.arange(4, dtype=jnp.int32)))
    text = the_record(records)
    assert "test_plugin_explain.add_one again" in text
    assert text.endswith("1 leaf at input[0][0]: dtype float32 to int32")


def test_a_key_added_to_a_dict_of_inputs(explained, mesh, records):
    f = cp.colocated_python(add_one)
    x = put(mesh, jnp.arange(4.0))
    f({"w": x})
    f({"w": x, "b": x})
    assert the_record(records).endswith('1 node at input[0][0]: key "b" added (1 leaf)')


def test_one_record_per_re_specialization_from_the_nearest(explained, mesh, records):
    f = cp.colocated_python(add_one)
    x, i = put(mesh, jnp.arange(4.0)), put(mesh, jnp.arange(4, dtype=jnp.int32))
    f([x, x, x])  # 1
    f([i, i, i])  # 2: three leaves from 1
    f([x, x, i])  # 3: one leaf from 1, two from 2
    f([x, x, x])  # 1 again: a hit
    got = [r.getMessage() for r in records()]
    assert len(got) == 2
    assert "specialization 1 and specialization 2 differ: 3 leaves in 1 group" in got[0]
    assert "specialization 1 and specialization 3 differ: 1 leaf in 1 group" in got[1]
    assert got[1].endswith("1 leaf at input[0][0][2]: dtype float32 to int32")


def test_many_groups_are_cut_after_three(explained, mesh, records):
    f = cp.colocated_python(add_one)
    x = put(mesh, jnp.arange(4.0))
    f((x, x, x, x, x))
    f((put(mesh, jnp.arange(8.0)), x.astype(jnp.int32), put(mesh, x, PartitionSpec()), [x], None))
    lines = the_record(records).split("\n")
    assert lines[0].endswith("differ: 6 leaves in 5 groups")  # None counts as a leaf gone
    assert lines[1:4] == [
        "  1 leaf at input[0][0][0]: shape (4,) to (8,)",
        "  1 leaf at input[0][0][1]: dtype float32 to int32",
        "  1 leaf at input[0][0][2]: sharding #2 to #5, PartitionSpec('x',) to ()",
    ]
    assert lines[4:] == ["  and 2 more groups"]


def test_functions_are_told_apart(explained, mesh, records):
    x, i = put(mesh, jnp.arange(4.0)), put(mesh, jnp.arange(4, dtype=jnp.int32))
    cp.colocated_python(add_one)(x)
    cp.colocated_python(double)(i)  # another function: its first specialization
    cp.colocated_python(double)(x)
    assert "test_plugin_explain.double again" in the_record(records)


@pytest.mark.skipif(
    jax.__version_info__ < (0, 8), reason="before JAX 0.8, callables share one cache"
)
def test_the_same_specs_in_a_new_callable_say_so(explained, mesh, records):
    x = put(mesh, jnp.arange(4.0))
    cp.colocated_python(add_one)(x)
    cp.colocated_python(add_one)(x)  # a new callable: a cache of its own
    assert the_record(records).split("\n") == [
        "colocated_python specialized test_plugin_explain.add_one again: specialization 2 has"
        " the same input specs and devices as specialization 1",
        "  a new colocated_python() or specialize() callable has a cache of its own, and"
        " jax.clear_caches() empties them",
    ]


def test_explain_off_logs_nothing_and_keeps_nothing(mesh, records, monkeypatch):
    monkeypatch.delenv(diff_nearest.ENV, raising=False)
    with plugin.installed(allow_pickle=True):
        assert plugin_codec.explainer is None
        f = cp.colocated_python(add_one)
        f(put(mesh, jnp.arange(4.0)))
        f(put(mesh, jnp.arange(4, dtype=jnp.int32)))
    assert records() == []


def test_the_environment_turns_it_on_at_install(mesh, records, monkeypatch):
    monkeypatch.setenv(diff_nearest.ENV, "1")
    with plugin.installed(allow_pickle=True):
        f = cp.colocated_python(add_one)
        f(put(mesh, jnp.arange(4.0)))
        f(put(mesh, jnp.arange(4, dtype=jnp.int32)))
    assert "dtype float32 to int32" in the_record(records)
    assert plugin_codec.explainer is None  # uninstalled with the block


def test_a_fault_in_explaining_is_logged_and_the_call_goes_on(
    explained, mesh, records, monkeypatch
):
    def broken(new, earlier):
        raise RuntimeError("no diff today")

    monkeypatch.setattr(plugin_explain, "nearest", broken)
    f = cp.colocated_python(add_one)
    f(put(mesh, jnp.arange(4.0)))
    got = f(put(mesh, jnp.arange(4, dtype=jnp.int32)))
    np.testing.assert_array_equal(np.asarray(got), np.arange(1, 5))
    assert the_record(records) == (
        "colocated_wire could not explain a specialization: RuntimeError('no diff today')"
    )


def test_memory_is_bounded_per_function_and_in_functions(mesh):
    explainer = plugin_explain.Explainer(cp.func)
    spec = jax.ShapeDtypeStruct((4,), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec()))
    devices = list(mesh.devices.flat)
    functions = [lambda a: a for _ in range(plugin_explain.KEPT_FUNCTIONS + 3)]
    for n in range(plugin_explain.KEPT_PER_FUNCTION + 3):
        treedef = jax.tree.structure(((spec,) * (n + 1), {}))
        program = (functions[0], treedef, (spec,) * (n + 1), None, None, devices)
        explainer.specialized(program, allow_pickle=False)
    for fun in functions[1:]:
        treedef = jax.tree.structure(((spec,), {}))
        explainer.specialized((fun, treedef, (spec,), None, None, devices), allow_pickle=False)
    seen = explainer._seen
    assert len(seen) == plugin_explain.KEPT_FUNCTIONS
    assert id(functions[0]) not in seen  # the least recently specialized is dropped
    last = seen[id(functions[-1])]
    assert (last.count, len(last.kept)) == (1, 1)


def test_jax_helpers_are_skipped_and_its_wrappers_looked_through():
    explainer = plugin_explain.Explainer(cp.func)

    def lowered_fun():  # as JAX's own helpers are: defined in func.py
        pass

    helper = type(lowered_fun)(lowered_fun.__code__, vars(cp.func))
    wrapper = type(lowered_fun)(lowered_fun.__code__, vars(cp.func))
    wrapper.__wrapped__ = add_one
    assert explainer._user_function(helper) is None
    assert explainer._user_function(wrapper) is add_one
    assert explainer._user_function(add_one) is add_one
