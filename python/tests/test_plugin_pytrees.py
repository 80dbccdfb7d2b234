"""Pytrees JAX accepts that colocated.v1.1 writes natively or, where pickles are trusted, pickled.

Every test runs real colocated Python functions twice (the `wire` fixture of
test_plugin.py): with JAX's own serialization and with
`colocated_wire.plugin.install(allow_pickle=True)`, and must see the same
values, key order and key types both ways. Dict keys that are floats, bytes
and tuples travel natively, so they also work without allow_pickle; any
other key, custom node aux data beyond plain values, and a defaultdict whose
default_factory has no name travel pickled, and without allow_pickle are an
EncodeError whose path names the node and whose message names the option.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools

import jax
import pytest
import test_plugin
from jax.experimental import colocated_python as cp
from local_node import local_node_class
from test_plugin import _assert_same, add_one

from colocated_wire import EncodeError, deserialize_specs, plugin

# test_plugin.py's fixtures: `wire` runs a test with JAX's serialization and with the plugin.
wire = test_plugin.wire
x = test_plugin.x


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Name(str):
    """A str subclass: JAX keeps it as the key's type."""


@jax.tree_util.register_pytree_node_class
class Tagged:
    """A custom node whose aux data is any hashable value."""

    def __init__(self, value, aux):
        self.value, self.aux = value, aux

    def tree_flatten(self):
        return (self.value,), self.aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux)


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["w"], meta_fields=["names", "scale", "act"]
)
@dataclasses.dataclass
class Layer:
    w: object
    names: frozenset
    scale: float
    act: object


def _keys_of(tree):
    """Every dict's keys, in order, with their types (JAX keeps both)."""
    found = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        for entry in path:
            if isinstance(entry, jax.tree_util.DictKey):
                found.append((entry.key, type(entry.key)))
    return found


def _same_tree(got, want):
    _assert_same(got, want)
    assert _keys_of(got) == _keys_of(want)


def test_float_bytes_and_tuple_keys_go_in_and_come_out(wire, x):
    tree = {
        "floats": {1.5: x, -0.0: x, float("inf"): x, 2.0: x},
        "numbers": {0.5: x, 1: x, True and 3: x},
        "bytes": {b"b": x, b"": x, b"\xff": x},
        "tuples": {(1, "a"): x, (0, "b"): x, (): x, (1.5,): x},
        "nested": {((1, 2), "x"): x, ((0,), None): x, ((3, (None, True)), b"q"): x},
    }
    f = cp.colocated_python(lambda t: jax.tree.map(add_one, t))
    _same_tree(f(tree), jax.tree.map(add_one, tree))
    wire.check(programs=3, carriers=1)
    if wire.backend == "colocated_wire":
        treedef, _ = deserialize_specs(wire.carriers[0])  # natively: no pickles to allow
        assert treedef == jax.tree.structure(tree)


def test_keys_with_no_wire_form_travel_pickled(wire, x):
    tree = {
        "enum": {Color.RED: x},
        "int_enum": {Level.HIGH: x, Level.LOW: x},
        "str_subclass": {Name("b"): x, Name("a"): x},
        "frozenset": {frozenset({1, 2}): x},
        "big_int": {2**70: x, 1: x},
        "tuple_of_enums": {(Level.LOW, 1): x, (Level.HIGH, 0): x},
    }
    f = cp.colocated_python(lambda t: jax.tree.map(add_one, t))
    _same_tree(f(tree), jax.tree.map(add_one, tree))
    wire.check(programs=3, carriers=1)


def test_custom_node_aux_data_of_any_hashable_type(wire, x):
    tree = [
        Tagged(x, ("a", "b")),
        Tagged(x, frozenset({"q"})),
        Tagged(x, 1.5),
        Tagged(x, add_one),
        Layer(x, frozenset({"k", "v"}), 0.5, add_one),
    ]
    f = cp.colocated_python(lambda t: jax.tree.map(add_one, t))
    out = f(tree)
    _same_tree(out, jax.tree.map(add_one, tree))
    assert [t.aux for t in out[:3]] == [("a", "b"), frozenset({"q"}), 1.5]
    assert out[3].aux is add_one  # a module-level function pickles by reference
    assert (out[4].names, out[4].scale, out[4].act) == (frozenset({"k", "v"}), 0.5, add_one)
    wire.check(programs=3, carriers=1)


def test_a_default_factory_without_a_name_travels_pickled(wire, x):
    def local_factory():
        return "fresh"

    tree = [
        collections.defaultdict(lambda: 0, {"a": x}),
        collections.defaultdict(local_factory, {"b": x}),
    ]
    f = cp.colocated_python(lambda t: jax.tree.map(add_one, t))
    zero, local = f(tree)
    # The factories are copies, as JAX's own pickles make them: equal in what they make.
    assert [type(d) for d in (zero, local)] == [collections.defaultdict] * 2
    _assert_same([dict(zero), dict(local)], jax.tree.map(add_one, [dict(d) for d in tree]))
    assert zero["missing"] == 0 and local["missing"] == "fresh"
    wire.check(programs=3, carriers=1)


Local = local_node_class()


def test_a_custom_node_class_without_a_name_travels_pickled(wire, x):
    f = cp.colocated_python(lambda t: jax.tree.map(add_one, t))
    out = f([Local(x), Local((x, x))])
    _same_tree(out, jax.tree.map(add_one, [Local(x), Local((x, x))]))
    assert type(out[0]) is Local  # in this process, the very class
    wire.check(programs=3, carriers=1)


# Without allow_pickle, only a module-level function runs, sent by name once its output specs
# are known: so these go in through `specialize`.
def identity(t):
    return t


def _by_name():
    return cp.colocated_python(identity).specialize(out_specs_fn=lambda t: t)


def test_native_keys_need_no_pickles(x):
    tree = {(1.5, b"k"): x, (2.5, b"a"): [x]}
    with plugin.installed(allowed_modules={__name__}):
        _same_tree(_by_name()(tree), tree)


@pytest.mark.parametrize(
    ("tree", "path", "what"),
    [
        ({Color.RED: "x"}, "kinds[2]", "dict key <Color.RED: 1>"),
        ([Tagged("x", frozenset({"q"}))], "kinds[3]", "custom pytree node data"),
        ([collections.defaultdict(lambda: 0, {"a": "x"})], "kinds[3]", "the default_factory"),
    ],
)
def test_without_allow_pickle_what_needs_a_pickle_is_an_encode_error_naming_it(x, tree, path, what):
    tree = jax.tree.map(lambda _: x, tree)
    with plugin.installed(allowed_modules={__name__}):
        with pytest.raises(EncodeError, match=r"allow_pickle=True") as caught:
            _by_name()(tree)
    # Input specs are ((t,), {}): tuple, tuple, then the tree.
    assert caught.value.path == f"input_specs.treedef.{path}"
    assert what in str(caught.value)
