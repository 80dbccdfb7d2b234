"""Registered custom pytree nodes travel by their importable qualified name (issue 12 item 6):
register_pytree_node_class and register_dataclass classes, nested classes, their aux data as
JSON. A reader that lacks the class, or has it unregistered, raises a LiftError naming it."""

import dataclasses
import sys

import jax
import numpy as np
import pytest

from colocated_wire import EncodeError, LiftError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2

X = jax.ShapeDtypeStruct((3,), np.float32)


class Outer:
    @jax.tree_util.register_pytree_node_class
    class Box:
        """A custom node whose aux data is a tag."""

        def __init__(self, items, tag):
            self.items, self.tag = items, tag

        def tree_flatten(self):
            return (self.items,), self.tag

        @classmethod
        def tree_unflatten(cls, tag, children):
            return cls(children[0], tag)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    """As Flax and Equinox users register theirs: data fields and static meta fields."""

    w: object
    b: object
    shape: tuple = dataclasses.field(metadata={"static": True}, default=(8, 4))
    name: str = dataclasses.field(metadata={"static": True}, default="dense")


class Unregistered:
    pass


def _specs(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, leaves


def _roundtrip(tree):
    treedef, leaves = _specs(tree)
    data = serialize_specs(treedef, leaves)
    assert deserialize_specs(data) == (treedef, tuple(leaves))
    return payload_pb2.SpecsPayload.FromString(data)


def test_a_nested_registered_class_travels_by_its_qualified_name():
    msg = _roundtrip({"box": Outer.Box([X, (X, None)], "t"), "more": [Outer.Box([], None)]})
    assert [t.name for t in msg.specs.treedef.node_types] == [f"{__name__}.Outer.Box"]
    assert list(msg.specs.treedef.node_data) == [b'j"t"', b""]


def test_dataclass_meta_fields_travel_as_json():
    msg = _roundtrip([Layer(X, None), Layer(X, X, shape=(2, 1), name="out")])
    assert [t.name for t in msg.specs.treedef.node_types] == [f"{__name__}.Layer"]
    assert list(msg.specs.treedef.node_data) == [b'j[[8,4],"dense"]', b'j[[2,1],"out"]']


def test_equal_layers_are_one_repeat_of_a_custom_node():
    msg = _roundtrip([Layer(X, [X, X]) for _ in range(4)])
    assert list(msg.specs.treedef.node_data) == [b'j[[8,4],"dense"]']  # written once
    assert len(msg.specs.leaves) == 3  # w, and b's run of two


def _renamed(tree, name):
    treedef, leaves = _specs(tree)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(treedef, leaves))
    msg.specs.treedef.node_types[0].name = name
    return msg.SerializeToString()


def test_a_class_the_reader_lacks_is_a_lift_error_naming_it():
    with pytest.raises(LiftError, match=r"pytree node type nowhere\.Thing is not defined"):
        deserialize_specs(_renamed([Layer(X, X)], "nowhere.Thing"))


def test_a_class_the_reader_has_not_registered_is_a_lift_error_naming_it():
    name = f"{__name__}.Unregistered"
    with pytest.raises(LiftError, match=rf"pytree node type {name} is not registered"):
        deserialize_specs(_renamed([Layer(X, X)], name))


def test_aux_data_that_is_not_json_of_plain_values_is_refused():
    treedef, leaves = _specs(Layer(X, X, shape=[8, 4]))  # a list is not hashable JSON here
    with pytest.raises(EncodeError, match="cannot be encoded"):
        serialize_specs(treedef, leaves)


def test_trees_jax_finds_equal_are_written_apart_when_their_values_differ():
    """JAX finds {1: x} and {True: x} equal, and Layer(shape=(1,)) and Layer(shape=(True,));
    the wire does not, and a tree written before does not stand in for the other."""
    for a, b in [({1: X}, {True: X}), (Layer(X, X, shape=(1,)), Layer(X, X, shape=(True,)))]:
        (ta, la), (tb, lb) = _specs(a), _specs(b)
        assert ta == tb
        da, db = serialize_specs(ta, la), serialize_specs(tb, lb)
        assert da != db
        assert serialize_specs(ta, la) == da
        assert str(deserialize_specs(db)[0]) == str(tb)  # True, not 1


def test_a_lifted_tree_is_given_again_only_while_its_classes_are_the_same(monkeypatch):
    treedef, leaves = _specs([Layer(X, X), Outer.Box([X], "t")])
    data = serialize_specs(treedef, leaves)
    first = deserialize_specs(data)[0]
    assert deserialize_specs(data)[0] is first  # checked and lifted once

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Layer2:  # the module's Layer redefined, as a reload does
        w: object
        b: object
        shape: tuple = dataclasses.field(metadata={"static": True}, default=(8, 4))
        name: str = dataclasses.field(metadata={"static": True}, default="dense")

    Layer2.__qualname__ = "Layer"
    monkeypatch.setattr(sys.modules[__name__], "Layer", Layer2)
    again = deserialize_specs(data)[0]
    assert again is not first
    assert again.children()[0].node_data()[0] is Layer2
