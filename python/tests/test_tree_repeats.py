"""colocated.v1.1 trees shortened: REPEAT of an earlier equal subtree, LEAVES runs, the str key
pool front-coded and fresh dict keys. Properties over random trees that share subtrees (by
value: every leaf and sharding is a fresh object, as programs build them), and the limits on
what a REPEAT may expand to."""

import collections

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from property_models import Pair, Point
from test_property import assert_one_object_per_value, shared_objects

from colocated_wire import (
    DecodeError,
    DecodeLimits,
    EncodeError,
    deserialize_specs,
    serialize_specs,
)
from colocated_wire._gen.colocated.v1 import payload_pb2, tree_pb2
from colocated_wire.entries.tree_keys import str_pool

K = tree_pb2
SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
KEYS = st.sampled_from(["", "a", "b", "layer_0", "layer_1", "layer_10", "é", "ü", "éa"])
INT_KEYS = st.integers(-3, 3)


def _leaf_kinds(devices):
    """Leaf makers: each call is a new object (a new sharding too), equal to the last."""
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    return [
        lambda: jax.ShapeDtypeStruct((2,), np.float32),
        lambda: jax.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P("x"))),
        lambda: jax.ShapeDtypeStruct((8,), jax.numpy.bfloat16, sharding=NamedSharding(mesh, P())),
    ]


def _node(pool, depth=0):
    """A tree description; ("ref", j) is pool subtree j again, built anew."""
    leaf = st.builds(lambda k: ("leaf", k), st.integers(0, 2))
    simple = [leaf, st.just(("none",))]
    if pool:
        simple.append(st.builds(lambda j: ("ref", j), st.integers(0, len(pool) - 1)))
    if depth >= 3:
        return st.one_of(*simple)
    child = st.deferred(lambda: _node(pool, depth + 1))
    kids = st.lists(child, max_size=4)
    return st.one_of(
        *simple,
        kids.map(lambda c: ("list", c)),
        kids.map(lambda c: ("tuple", c)),
        st.dictionaries(KEYS, child, max_size=4).map(lambda d: ("dict", sorted(d.items()))),
        st.dictionaries(INT_KEYS, child, max_size=3).map(lambda d: ("dict", sorted(d.items()))),
        st.tuples(child, child).map(lambda c: ("point", *c)),
        st.tuples(st.sampled_from(["a", "tag"]), child, child).map(lambda c: ("pair", *c)),
    )


@st.composite
def shared_trees(draw):
    pool = []
    for _ in range(draw(st.integers(0, 4))):
        pool.append(draw(_node(pool)))
    root = draw(_node(pool))
    if pool and draw(st.booleans()):  # a subtree twice more, as layers and optimizer state are
        j = draw(st.integers(0, len(pool) - 1))
        root = ("list", [root, ("ref", j), ("tuple", [("ref", j)])])
    return pool, root


def _build(desc, pool, makers):
    kind = desc[0]
    if kind == "leaf":
        return makers[desc[1]]()
    if kind == "none":
        return None
    if kind == "ref":
        return _build(pool[desc[1]], pool, makers)
    if kind in ("list", "tuple"):
        children = [_build(c, pool, makers) for c in desc[1]]
        return children if kind == "list" else tuple(children)
    if kind == "dict":
        return {k: _build(v, pool, makers) for k, v in desc[1]}
    if kind == "point":
        return Point(_build(desc[1], pool, makers), _build(desc[2], pool, makers))
    return Pair(_build(desc[2], pool, makers), _build(desc[3], pool, makers), tag=desc[1])


def _treedef(data):
    return payload_pb2.SpecsPayload.FromString(data).specs


def _expand(specs):
    """The nodes and leaf refs a TreeDef message stands for, every key, type and node data by
    value, read naively (recursively) from its columns: a second reading of the format."""
    td = specs.treedef
    strings = list(str_pool(td, "treedef", 1, 1 << 30, 1 << 30))
    others = [(k.WhichOneof("key"), getattr(k, k.WhichOneof("key"))) for k in td.keys]
    pool = [("str", s) for s in strings] + others
    kinds, arities, leaves = list(td.kinds), list(td.arities), list(specs.leaves)
    at = {"a": 0, "k": 0, "t": 0, "d": 0, "leaf": 0}
    out, refs, spans = [], [], {}

    def take(column):
        at[column] += 1
        return at[column] - 1

    def visit(i):
        """Reads written node i; returns (next written index, children it stands for)."""
        kind = kinds[i]
        start, leaf_start = len(out), len(refs)
        if kind in (K.NODE_KIND_LEAF, K.NODE_KIND_LEAVES):
            count = 1 if kind == K.NODE_KIND_LEAF else arities[take("a")]
            out.extend([("leaf",)] * count)
            refs.extend(leaves[take("leaf")] for _ in range(count))
            return i + 1, count
        end = i + 1
        if kind == K.NODE_KIND_NONE:
            out.append(("none",))
        elif kind == K.NODE_KIND_REPEAT:
            s, e, ls, le = spans[arities[take("a")]]
            out.extend(out[s:e])
            refs.extend(refs[ls:le])
        else:
            arity = arities[take("a")]
            keys = ()
            if kind in (K.NODE_KIND_DICT, K.NODE_KIND_ORDERED_DICT, K.NODE_KIND_DEFAULT_DICT):
                keys = tuple(
                    pool[take("k") if td.fresh_dict_keys else td.dict_keys[take("k")]]
                    for _ in range(arity)
                )
            node_type = data = None
            if kind in (K.NODE_KIND_NAMEDTUPLE, K.NODE_KIND_CUSTOM, K.NODE_KIND_DEFAULT_DICT):
                t = td.node_types[td.type_refs[take("t")]]
                node_type = (t.name, tuple(t.fields))
            if kind == K.NODE_KIND_CUSTOM:
                data = td.node_data[take("d")]
            out.append((kind, arity, keys, node_type, data))
            seen = 0
            while seen < arity:
                end, count = visit(end)
                seen += count
        spans[i] = (start, len(out), leaf_start, len(refs))
        return end, 1

    assert visit(0)[0] == len(kinds)
    return out, refs


@pytest.fixture(scope="module")
def makers(devices):
    return _leaf_kinds(devices)


@SETTINGS
@given(shared_trees())
def test_shared_subtrees_come_back_equal_with_one_object_per_value(makers, tree):
    pool, root = tree
    leaves, treedef = jax.tree_util.tree_flatten(_build(root, pool, makers))
    data = serialize_specs(treedef, leaves)
    treedef2, leaves2 = deserialize_specs(data)
    assert treedef2 == treedef
    assert list(leaves2) == leaves
    assert_one_object_per_value(shared_objects(*leaves2))
    assert serialize_specs(treedef2, leaves2) == data  # canonical


def _walk(treedef):
    """A PyTreeDef's nodes in preorder as _expand gives them (node data left out)."""
    kinds = {tuple: K.NODE_KIND_TUPLE, list: K.NODE_KIND_LIST, dict: K.NODE_KIND_DICT}
    names = {str: "str", bool: "bool", int: "int"}
    out, stack = [], [treedef]
    while stack:
        t = stack.pop()
        nd = t.node_data()
        if nd is None:
            out.append(("leaf",))
            continue
        cls, aux = nd
        if cls is type(None):
            out.append(("none",))
            continue
        children = t.children()
        if cls in kinds:
            keys = tuple((names[type(k)], k) for k in aux) if cls is dict else ()
            out.append((kinds[cls], len(children), keys, None, None))
        elif cls is Point:
            out.append((K.NODE_KIND_NAMEDTUPLE, 2, (), ("property_models.Point", ("x", "y")), None))
        else:
            out.append((K.NODE_KIND_CUSTOM, 2, (), ("property_models.Pair", ()), None))
        stack.extend(reversed(children))
    return out


@SETTINGS
@given(shared_trees())
def test_the_shortened_tree_expands_to_the_whole_tree(makers, tree):
    pool, root = tree
    leaves, treedef = jax.tree_util.tree_flatten(_build(root, pool, makers))
    new = _treedef(serialize_specs(treedef, leaves, target_minor_version=1))
    nodes, refs = _expand(new)
    assert [n[:4] + (None,) if len(n) > 1 else n for n in nodes] == _walk(treedef)
    assert len(new.treedef.kinds) <= len(nodes)
    if any(isinstance(k, int) for n in nodes if len(n) > 1 for _, k in n[2]):
        return  # int keys: no 1.0 form to compare with
    old = _treedef(serialize_specs(treedef, leaves, target_minor_version=0))
    assert (nodes, refs) == _expand(old)
    assert not {K.NODE_KIND_LEAVES, K.NODE_KIND_REPEAT} & set(old.treedef.kinds)
    assert not old.treedef.key_text and not old.treedef.fresh_dict_keys


@SETTINGS
@given(shared_trees())
def test_a_1_0_reader_reads_1_0_and_refuses_what_only_1_1_writes(makers, tree):
    pool, root = tree
    leaves, treedef = jax.tree_util.tree_flatten(_build(root, pool, makers))
    new = serialize_specs(treedef, leaves)
    try:
        old = serialize_specs(treedef, leaves, target_minor_version=0)
    except EncodeError as e:  # int keys are 1.1's
        assert "needs colocated.v1.1" in str(e)
        old = None
    else:
        assert deserialize_specs(old, max_minor_version=0) == (treedef, tuple(leaves))
    with pytest.raises(DecodeError) as info:
        deserialize_specs(new, max_minor_version=0)
    assert info.value.code == "unsupported-version"
    # Under a 1.0 header, the shortened tree is refused wherever it differs from 1.0.
    msg = payload_pb2.SpecsPayload.FromString(new)
    msg.header.minor_version = 0
    if old is not None and msg.specs.treedef == _treedef(old).treedef:
        assert deserialize_specs(msg.SerializeToString()) == (treedef, tuple(leaves))
    else:
        with pytest.raises(DecodeError, match=r"needs colocated\.v1\.1") as info:
            deserialize_specs(msg.SerializeToString())
        assert info.value.code == "unsupported-version"


def _specs_payload(treedef: tree_pb2.TreeDef, leaves: int, minor: int = 1) -> bytes:
    leaf = jax.ShapeDtypeStruct((1,), np.float32)
    base = payload_pb2.SpecsPayload.FromString(
        serialize_specs(jax.tree_util.tree_structure(0), [leaf])
    )
    base.header.minor_version = minor
    base.specs.treedef.CopyFrom(treedef)
    base.specs.ClearField("leaves")
    base.specs.leaves.extend([0] * leaves)
    return base.SerializeToString()


def _doubling(levels: int) -> tree_pb2.TreeDef:
    """[[[x, x], REPEAT], REPEAT]: each level a list of the level below and a REPEAT of it,
    so 2 * levels written nodes expand to 2 ** (levels + 1) - 1 lists and leaves."""
    kinds = [K.NODE_KIND_LIST] * levels + [K.NODE_KIND_LEAVES]
    arities = [2] * levels + [2]
    for level in range(levels - 1):
        kinds.append(K.NODE_KIND_REPEAT)
        arities.append(levels - 1 - level)  # the list of the level below, complete by now
    return tree_pb2.TreeDef(kinds=kinds, arities=arities)


def test_a_small_doubling_tree_expands_to_its_leaves():
    treedef, leaves = deserialize_specs(_specs_payload(_doubling(3), 2))
    assert treedef == jax.tree_util.tree_structure([[[0, 0]] * 2] * 2)
    assert len(leaves) == 8 and len({id(x) for x in leaves}) == 1


def test_a_repeat_bomb_is_refused_before_it_is_expanded():
    # 2 ** 60 nodes: refused from sizes counted per written node, or this would never end.
    with pytest.raises(DecodeError) as info:
        deserialize_specs(_specs_payload(_doubling(60), 2))
    assert info.value.code == "limit-exceeded"
    assert info.value.path.startswith("specs.treedef.kinds[")


def test_the_expanded_nodes_and_depth_count_against_the_limits():
    # 7 lists and 8 leaves, 3 deep; the last REPEAT (kinds[5]) brings the count from 8 to 15.
    data = _specs_payload(_doubling(3), 2)
    deserialize_specs(data, limits=DecodeLimits(max_tree_nodes=15, max_tree_depth=3))
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, limits=DecodeLimits(max_tree_nodes=14))
    assert (info.value.path, info.value.code) == ("specs.treedef.kinds[5]", "limit-exceeded")
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, limits=DecodeLimits(max_tree_depth=2))
    assert (info.value.path, info.value.code) == ("specs.treedef.kinds[2]", "limit-exceeded")


def test_a_repeat_is_as_deep_as_its_source_where_it_stands():
    # [[[x, x]], [REPEAT of node 1]]: written 3 deep, expanded 4 deep at the REPEAT.
    kinds = [K.NODE_KIND_LIST, K.NODE_KIND_LIST, K.NODE_KIND_LIST, K.NODE_KIND_LEAVES]
    kinds += [K.NODE_KIND_LIST, K.NODE_KIND_REPEAT]
    data = _specs_payload(tree_pb2.TreeDef(kinds=kinds, arities=[2, 1, 2, 2, 1, 1]), 2)
    treedef, _ = deserialize_specs(data, limits=DecodeLimits(max_tree_depth=4))
    assert treedef == jax.tree_util.tree_structure([[[0, 0]], [[[0, 0]]]])
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, limits=DecodeLimits(max_tree_depth=3))
    assert (info.value.path, info.value.code) == ("specs.treedef.kinds[5]", "limit-exceeded")


def test_layers_are_written_once(devices):
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))

    def layer():
        s = NamedSharding(mesh, P("x"))
        return {"attn": {"q": jax.ShapeDtypeStruct((8, 4), np.float32, sharding=s)}, "b": None}

    tree = {"layers": [layer() for _ in range(40)]}
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    specs = _treedef(serialize_specs(treedef, leaves))
    kinds = list(specs.treedef.kinds)
    dict_, list_ = K.NODE_KIND_DICT, K.NODE_KIND_LIST
    layer = [dict_, dict_, K.NODE_KIND_LEAF, K.NODE_KIND_NONE]
    assert kinds == [dict_, list_, *layer] + [K.NODE_KIND_REPEAT] * 39
    assert list(specs.treedef.arities)[-39:] == [2] * 39  # each the first layer's dict
    assert len(specs.leaves) == 1


def test_a_dataclass_layer_repeats_and_lifts_by_name():
    x = jax.ShapeDtypeStruct((3,), np.float32)
    tree = [Pair(x, [x, None], tag="t") for _ in range(3)]
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves)
    kinds = list(_treedef(data).treedef.kinds)
    assert kinds.count(K.NODE_KIND_REPEAT) == 2
    assert deserialize_specs(data) == (treedef, tuple(leaves))


def test_ordered_dicts_repeat_only_with_their_key_order():
    x = jax.ShapeDtypeStruct((3,), np.float32)
    od = collections.OrderedDict
    tree = [od([("a", x), ("b", x)]), od([("b", x), ("a", x)]), od([("a", x), ("b", x)])]
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves)
    kinds = list(_treedef(data).treedef.kinds)
    assert kinds.count(K.NODE_KIND_REPEAT) == 1
    assert deserialize_specs(data)[0] == treedef
