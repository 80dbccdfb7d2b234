"""colocated.v1.1 trees: dict keys that are not str, OrderedDict and defaultdict nodes, and how
a 1.0 target and a 1.0 header gate them."""

import collections

import jax
import pytest
from jax import numpy as jnp

from colocated_wire import DecodeError, EncodeError, LiftError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2, tree_pb2, version_pb2
from colocated_wire.entries.tree_keys import str_pool

SDS = jax.ShapeDtypeStruct


def leaf(n=1):
    return SDS((n,), jnp.float32)


def roundtrip(tree, target=None):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves, target_minor_version=target)
    treedef2, leaves2 = deserialize_specs(data)
    assert treedef2 == treedef
    assert list(leaves2) == leaves
    assert serialize_specs(treedef2, leaves2, target_minor_version=target) == data
    return data, treedef2


def parse(data):
    return payload_pb2.SpecsPayload.FromString(data)


def make_factory():
    return 7


@pytest.mark.parametrize(
    "tree",
    [
        {0: leaf(), 1: leaf(2)},
        {-3: leaf(), 2**63 - 1: None, 5: [leaf()]},
        {True: leaf(), False: leaf(2)},
        {True: leaf(), 0: leaf(2), 2: leaf(3)},
        {None: leaf()},
        {"a": {1: leaf()}, "b": {"1": leaf(2)}},
        collections.OrderedDict([("b", leaf()), (1, leaf(2)), (None, ()), (False, leaf(3))]),
        collections.OrderedDict(),
        collections.defaultdict(list, {"b": leaf(), "a": leaf(2)}),
        collections.defaultdict(None, {2: leaf(), 1: leaf(2)}),
        collections.defaultdict(make_factory, {"x": collections.defaultdict(dict)}),
        [collections.defaultdict(list), collections.defaultdict(list, {0: leaf()})],
    ],
)
def test_builtin_dict_nodes_round_trip_at_1_1(tree):
    roundtrip(tree)


def test_int_keys_are_a_typed_pool_after_the_strings():
    data, _ = roundtrip(
        {"s": {0: leaf(), True: leaf()}, "t": collections.OrderedDict([(0, leaf())])}
    )
    td = parse(data).specs.treedef
    assert (td.key_text, list(td.key_sizes)) == (b"st", [0, 1, 0, 1])
    # The int 0 and the bool True are two pool entries; the OrderedDict's 0 is the first again.
    assert [(k.WhichOneof("key"), getattr(k, k.WhichOneof("key"))) for k in td.keys] == [
        ("int", 0),
        ("bool", True),
    ]
    assert list(td.dict_keys) == [0, 1, 2, 3, 2]


def test_a_1_0_target_writes_ordered_dicts_as_1_0_did():
    tree = [
        collections.OrderedDict([("b", leaf()), (2, leaf())]),
        collections.defaultdict(None, {"a": leaf()}),
    ]
    data, treedef = roundtrip(tree, target=0)
    td = parse(data).specs.treedef
    assert parse(data).header.minor_version == 0
    assert [t.name for t in td.node_types] == ["collections.OrderedDict", "collections.defaultdict"]
    assert list(td.node_data) == [b'j["b",2]', b'j[null,["a"]]']
    assert not td.keys


@pytest.mark.parametrize(
    ("tree", "path", "what"),
    [
        ({1: leaf()}, "specs.treedef.kinds[0]", "dict key 1"),
        ([leaf(), {"a": {None: leaf()}}], "specs.treedef.kinds[3]", "dict key None"),
        (
            collections.defaultdict(list),
            "specs.treedef.kinds[0]",
            "a defaultdict with default_factory",
        ),
    ],
)
def test_a_1_0_target_refuses_1_1_constructs_naming_1_1(tree, path, what):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    with pytest.raises(EncodeError, match=r"needs colocated\.v1\.1; the target is 1\.0") as e:
        serialize_specs(treedef, leaves, target_minor_version=0)
    assert e.value.path == path
    assert what in str(e.value)


@pytest.mark.parametrize(
    "factory", [lambda: 0, collections.Counter().most_common, make_factory.__call__]
)
def test_a_factory_without_an_importable_name_is_refused_at_its_node(factory):
    leaves, treedef = jax.tree_util.tree_flatten([leaf(), collections.defaultdict(factory)])
    with pytest.raises(EncodeError, match="has no importable name") as e:
        serialize_specs(treedef, leaves)
    assert e.value.path == "specs.treedef.kinds[2]"


def test_a_key_past_int64_is_refused():
    leaves, treedef = jax.tree_util.tree_flatten({2**63: leaf()})
    with pytest.raises(EncodeError, match="int64") as e:
        serialize_specs(treedef, leaves)
    assert e.value.path == "specs.treedef.kinds[0]"


def test_a_factory_this_process_lacks_is_a_lift_error():
    data, _ = roundtrip(collections.defaultdict(make_factory, {"a": leaf()}))
    msg = parse(data)
    msg.specs.treedef.node_types[0].name = "nowhere.module.factory"
    with pytest.raises(LiftError, match="nowhere.module.factory"):
        deserialize_specs(msg.SerializeToString())


def _under_1_0(tree):
    """A 1.1 payload of `tree` under a 1.0 header, its str keys as 1.0 writes them (`strings`,
    `dict_keys`), so that only the construct under test is new."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    msg = parse(serialize_specs(treedef, leaves))
    msg.header.minor_version = 0
    td = msg.specs.treedef
    td.strings.extend(str_pool(td, "treedef", 1, 1 << 20, 1 << 20))
    if td.fresh_dict_keys:
        td.dict_keys.extend(range(len(td.strings) + len(td.keys)))
    for name in ("key_text", "key_sizes", "fresh_dict_keys"):
        td.ClearField(name)
    return msg.SerializeToString()


@pytest.mark.parametrize(
    ("tree", "path"),
    [
        (collections.OrderedDict([("a", leaf())]), "specs.treedef.kinds[0]"),
        ([leaf(), collections.defaultdict(list)], "specs.treedef.kinds[2]"),
        ({"a": leaf(), "b": {3: leaf()}}, "specs.treedef.dict_keys[2]"),
    ],
)
def test_a_1_0_header_refuses_1_1_constructs(tree, path):
    with pytest.raises(DecodeError, match=r"needs colocated\.v1\.1; the header says 1\.0") as e:
        deserialize_specs(_under_1_0(tree))
    assert (e.value.path, e.value.code) == (path, "unsupported-version")


def test_the_node_kinds_and_key_pool_are_declared_1_1():
    kinds = tree_pb2.NodeKind.DESCRIPTOR.values_by_name
    for name in ("NODE_KIND_ORDERED_DICT", "NODE_KIND_DEFAULT_DICT"):
        assert kinds[name].GetOptions().Extensions[version_pb2.since] == 1
    keys = tree_pb2.TreeDef.DESCRIPTOR.fields_by_name["keys"]
    assert keys.GetOptions().Extensions[version_pb2.field_since] == 1
