"""Pickles in trees (colocated.v1.1) are written and run only where they are trusted.

A key, custom node aux data or default_factory with no wire form travels
pickled under `allow_pickle=True` on both sides; the lowering and lifting
caches must never hand one to a caller that did not allow it, checking never
unpickles, and a 1.0 target refuses what 1.1 added.
"""

import collections
import enum

import jax
import jax.numpy as jnp
import pytest

from colocated_wire import EncodeError, LiftError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2

S = jax.ShapeDtypeStruct((2,), jnp.float32)
LOADED: list[str] = []


class Level(enum.IntEnum):
    LOW = 1


def mark(what: str) -> str:
    LOADED.append(what)
    return what


class Loud:
    """A dict key whose unpickling shows that it ran."""

    def __reduce__(self):
        return (mark, ("unpickled",))

    def __hash__(self):
        return 1


def specs_of(tree, **options) -> bytes:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return serialize_specs(treedef, leaves, **options)


@pytest.mark.parametrize(
    "tree",
    [
        {Level.LOW: S},
        [collections.defaultdict(lambda: 0, {"a": S})],
        jax.tree_util.Partial(len, S),  # aux data: a function
    ],
)
def test_a_tree_lowered_with_pickles_is_not_written_again_without(tree):
    data = specs_of(tree, allow_pickle=True)
    with pytest.raises(EncodeError, match=r"allow_pickle=True"):
        specs_of(tree)
    deserialize_specs(data, allow_pickle=True)
    with pytest.raises(LiftError, match=r"allow_pickle=True"):
        deserialize_specs(data)  # the tree checked and lifted before is not handed out


def test_checking_never_unpickles():
    data = specs_of({Loud(): S}, allow_pickle=True)
    LOADED.clear()
    with pytest.raises(LiftError):
        deserialize_specs(data)
    assert LOADED == []
    deserialize_specs(data, allow_pickle=True)
    assert LOADED == ["unpickled"]


@pytest.mark.parametrize(
    ("tree", "what"),
    [
        ([S, {1.5: S}], "dict key 1.5"),
        ([S, {(1, "a"): S}], "dict key (1, 'a')"),
        ([S, {b"k": S}], "dict key b'k'"),
    ],
)
def test_a_1_0_target_refuses_1_1_keys_at_their_node(tree, what):
    with pytest.raises(EncodeError, match="needs colocated.v1.1") as caught:
        specs_of(tree, target_minor_version=0)
    assert caught.value.path == "specs.treedef.kinds[2]"
    assert what in str(caught.value)


def test_a_1_0_target_refuses_pickled_node_data():
    tree = [S, jax.tree_util.Partial(len, S)]
    with pytest.raises(EncodeError, match="needs colocated.v1.1") as caught:
        specs_of(tree, target_minor_version=0, allow_pickle=True)
    assert caught.value.path == "specs.treedef.kinds[2]"


def test_a_tuple_key_follows_its_items_in_the_pool():
    data = specs_of({((2,), "x"): S})
    tree = payload_pb2.SpecsPayload.FromString(data).specs.treedef
    # "x" is str 0; then 2 (pool 1), (2,) (pool 2), ((2,), "x") (pool 3).
    assert [k.WhichOneof("key") for k in tree.keys] == ["int", "tuple", "tuple"]
    assert list(tree.keys[2].tuple.items) == [2, 0]
    assert list(tree.dict_keys) == [3] and not tree.fresh_dict_keys


def test_keys_equal_in_python_stay_apart_on_the_wire():
    for a, b in [(1, 1.0), ((1,), (True,)), (0.0, -0.0), ((0.0,), (-0.0,))]:
        one, two = specs_of([{a: S}, {b: S}]), specs_of([{a: S}, {a: S}])
        assert one != two
        treedef, _ = deserialize_specs(one)
        keys = [next(iter(d)) for d in jax.tree_util.tree_unflatten(treedef, [S, S])]
        assert [repr(k) for k in keys] == [repr(a), repr(b)]
