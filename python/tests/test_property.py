"""Properties over random models (hypothesis), in the description format of property_models.py.

- deserialize(serialize(x)) equals x, and holds one object per value: two
  decoded objects are the same object exactly when they are equal;
- serialize(deserialize(b)) is b for every canonical b;
- the same for values (1.2), trees over the shared objects, dtypes, an impl
  and a function by name.
The models are those JAX accepts (test/property-models.ts says which);
test/property-cross-language.test.ts checks that TypeScript writes the same
bytes for the same models.
"""

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax._src.random import prng
from jax.sharding import NamedSharding
from property_models import build_program, build_specs, build_value

from colocated_wire import (
    UnloadedFunction,
    deserialize_program,
    deserialize_specs,
    deserialize_value,
    serialize_program,
    serialize_specs,
    serialize_value,
)
from colocated_wire.entries import codec_of

# Derandomized: the same models on every run.
SETTINGS = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_DEVICE = 256
MEMORY_KINDS = [None, "device", "pinned_host", "unpinned_host"]
DTYPES = (
    "bool int2 int4 int8 int16 int32 int64 uint2 uint4 uint8 uint16 uint32 uint64 float16 float32"
    " float64 bfloat16 complex64 complex128 float8_e3m4 float8_e4m3 float8_e4m3fn float8_e4m3fnuz"
    " float8_e4m3b11fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu float4_e2m1fn string"
    # colocated.v1.1
    " float0 int1 uint1 float6_e2m3fn float6_e3m2fn float8_e5m3fnu key"
).split()
# The key arrays of JAX's own impls, by name and key shape.
KEY_TYPES = [
    {"impl": "threefry2x32", "keyShape": [2]},
    {"impl": "rbg", "keyShape": [4]},
    {"impl": "unsafe_rbg", "keyShape": [4]},
]
NAMES = st.one_of(
    st.sampled_from(["x", "y", "z", "data", "model", "é", "𝔵"]),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=3),
)


@st.composite
def device_ids(draw, count):
    if draw(st.booleans()):  # a regular order: offset + arange(count).reshape(dims).transpose
        dims, rest = [], count
        for d in range(2, count + 1):
            while rest % d == 0 and draw(st.booleans()):
                dims.append(d)
                rest //= d
        dims = dims + [rest] if rest > 1 else dims or [1]
        perm = draw(st.permutations(range(len(dims))))
        offset = draw(st.integers(0, MAX_DEVICE - count))
        return (np.arange(count).reshape(dims).transpose(perm).reshape(-1) + offset).tolist()
    ids = draw(
        st.lists(st.integers(0, MAX_DEVICE - 1), min_size=count, max_size=count, unique=True)
    )
    return sorted(ids) if draw(st.booleans()) else ids


@st.composite
def partition_spec(draw, mesh):
    axes = draw(st.permutations(mesh["names"]))
    types = dict(zip(mesh["names"], mesh["types"], strict=True))
    entries, used = [], 0
    for _ in range(draw(st.integers(0, 4))):
        form = draw(st.integers(0, 3))
        if form == 1 and used < len(axes):
            entries.append({"axis": axes[used]})
            used += 1
        elif form == 2 and used + 2 <= len(axes):
            size = draw(st.integers(2, len(axes) - used))
            entries.append({"tuple": axes[used : used + size]})
            used += size
        elif form == 3 and "Auto" in mesh["types"]:
            entries.append({"unconstrained": True})
        else:
            entries.append(None)
    roles = {"unreduced": [], "reduced": []}
    for a in axes[used:]:
        role = draw(st.sampled_from([None, "unreduced", "reduced"]))
        if role and types[a] == "Explicit":
            roles[role].append(a)
    return {"entries": entries, **roles}


@st.composite
def gspmd(draw, index, size):
    base = {"list": index, "dims": [], "devices": [], "replicate": False}
    base["memoryKind"] = draw(st.sampled_from(MEMORY_KINDS))
    form = draw(st.integers(0, 2 if size >= 2 else 1))
    if form == 0:
        return {**base, "type": "replicated"}
    if form == 1:
        return {**base, "type": "maximal", "devices": [draw(st.integers(0, size - 1))]}
    dims = draw(
        st.sampled_from([d for d in ([2], [4], [2, 2], [3], [2, 1], [1, 2, 2]) if _prod(d) <= size])
    )
    tiles = _prod(dims)
    devices = draw(st.permutations(range(size)))[:tiles]
    replicate = len(dims) >= 2 and 2 <= dims[-1] < tiles and draw(st.booleans())
    if replicate:  # XLA keeps each replicated group sorted
        devices = [d for i in range(0, tiles, dims[-1]) for d in sorted(devices[i : i + dims[-1]])]
    return {**base, "type": "other", "dims": dims, "devices": devices, "replicate": replicate}


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def _rank(sharding):
    if sharding is None or "single" in sharding:
        return 0
    if "named" in sharding:
        return len(sharding["named"]["entries"])
    g = sharding["gspmd"]
    return {"replicated": 0, "maximal": 1, "other": len(g["dims"]) - g["replicate"]}[g["type"]]


def tree(leaves, depth=0):
    leaf = st.builds(lambda i: {"leaf": i}, st.integers(0, leaves - 1))
    if depth >= 3:
        return leaf
    child = st.deferred(lambda: tree(leaves, depth + 1))

    def keyed_by(keys):
        return st.lists(keys, max_size=3, unique=True).flatmap(
            lambda ks: st.tuples(*(child for _ in ks)).map(
                lambda v: [list(p) for p in zip(ks, v, strict=True)]
            )
        )

    keyed = keyed_by(NAMES)
    # colocated.v1.1: int keys (beyond int64 is refused, so within it), and an OrderedDict's
    # keys in any order; 1 and True are one key in Python, so ints only.
    int_keyed = keyed_by(st.integers(-(2**63), 2**63 - 1))
    mixed_keyed = keyed_by(st.one_of(NAMES, st.integers(-3, 3)))
    return st.one_of(
        leaf,
        st.just({"none": True}),
        st.lists(child, max_size=3).map(lambda c: {"tuple": c}),
        st.lists(child, max_size=3).map(lambda c: {"list": c}),
        keyed.map(lambda kv: {"dict": kv}),
        int_keyed.map(lambda kv: {"intDict": kv}),
        mixed_keyed.map(lambda kv: {"ordered": kv}),
        st.tuples(st.sampled_from(["builtins.list", None]), keyed).map(
            lambda t: {"defaultDict": {"factory": t[0], "entries": t[1]}}
        ),
        st.tuples(child, child).map(lambda v: {"namedtuple": {"type": "Point", "values": list(v)}}),
        st.tuples(st.sampled_from(["a", "tag"]), child, child).map(
            lambda t: {"custom": {"tag": t[0], "a": t[1], "b": t[2]}}
        ),
    )


@st.composite
def models(draw, program=False):
    lists, meshes = [], []
    for _ in range(draw(st.integers(0, 3))):
        sizes = draw(st.lists(st.integers(1, 4), max_size=3))
        names = draw(st.lists(NAMES, min_size=len(sizes), max_size=len(sizes), unique=True))
        types = [draw(st.sampled_from(["Auto", "Explicit", "Manual"])) for _ in sizes]
        lists.append(draw(device_ids(_prod(sizes))))
        meshes.append({"list": len(lists) - 1, "sizes": sizes, "names": names, "types": types})
    lists.append(draw(device_ids(draw(st.integers(1, 16)))))
    shardings = []
    for _ in range(draw(st.integers(0, 4))):
        form = draw(st.integers(0, 2))
        kind = draw(st.sampled_from(MEMORY_KINDS))
        if form == 0 and meshes:
            m = draw(st.integers(0, len(meshes) - 1))
            spec = draw(partition_spec(meshes[m]))
            shardings.append({"named": {"mesh": m, **spec, "memoryKind": kind}})
        elif form == 1:
            device = draw(st.integers(0, MAX_DEVICE - 1))
            shardings.append({"single": {"device": device, "memoryKind": kind}})
        else:
            i = draw(st.integers(0, len(lists) - 1))
            shardings.append({"gspmd": draw(gspmd(i, len(lists[i])))})
    leaves = []
    for _ in range(draw(st.integers(1, 6))):
        s = draw(st.none() | st.integers(0, len(shardings) - 1)) if shardings else None
        rank = draw(st.integers(_rank(None if s is None else shardings[s]), 4))
        shape = draw(st.lists(st.integers(0, 8) | st.just(2**53 - 1), min_size=rank, max_size=rank))
        dtype = draw(st.sampled_from(DTYPES))
        leaf = {"shape": shape, "dtype": dtype, "sharding": s, "weakType": draw(st.booleans())}
        if dtype == "key":
            leaf["keyType"] = draw(st.sampled_from(KEY_TYPES))
        leaves.append(leaf)
    desc = {"lists": lists, "meshes": meshes, "shardings": shardings, "leaves": leaves}
    desc["tree"] = draw(tree(len(leaves)))
    if program:
        kinds = [("list", lists), ("mesh", meshes), ("sharding", shardings), ("leaf", leaves)]
        kinds = [(k, xs) for k, xs in kinds if xs]
        refs = [
            {k: draw(st.integers(0, len(xs) - 1))}
            for k, xs in draw(st.lists(st.sampled_from(kinds), max_size=3))
        ]
        pickled = {"pickle": draw(st.lists(st.integers(0, 255), max_size=8)), "refs": refs}
        fn = draw(st.sampled_from([{"byName": ["property_models", "step"]}, {"pickled": pickled}]))
        outputs = draw(st.none() | tree(len(leaves)))
        desc["program"] = {"function": fn, "devices": len(lists) - 1, "outputs": outputs}
    return desc


def shared_objects(*roots):
    """Every shared object the roots reach: leaves, shardings, meshes, GSPMD device lists."""
    out = []

    def visit(o):
        if o is None:
            return
        out.append(o)
        if isinstance(o, jax.ShapeDtypeStruct):
            visit(o.sharding)
        elif isinstance(o, NamedSharding):
            visit(o.mesh)
        elif hasattr(o, "_hlo_sharding"):
            visit(o._internal_device_list)

    for root in roots:
        visit(root)
    return out


def assert_one_object_per_value(objects):
    for a in objects:
        for b in objects:
            if type(a) is type(b):
                assert (a is b) == (a == b), (a, b)


@SETTINGS
@given(models())
def test_specs_come_back_equal_with_one_object_per_value(devices, desc):
    treedef, leaves = build_specs(desc)
    treedef2, leaves2 = deserialize_specs(serialize_specs(treedef, leaves))
    assert treedef2 == treedef
    assert list(leaves2) == leaves
    assert_one_object_per_value(shared_objects(*leaves2))


@SETTINGS
@given(models())
def test_canonical_specs_bytes_come_back(devices, desc):
    data = serialize_specs(*build_specs(desc))
    assert serialize_specs(*deserialize_specs(data)) == data


@SETTINGS
@given(models(program=True))
def test_programs_come_back(devices, desc):
    args = build_program(desc)
    data = serialize_program(*args)
    prog = deserialize_program(data, allowed_modules={"property_models"})
    assert serialize_program(*prog) == data
    assert prog.in_treedef == args[1] and list(prog.in_leaves) == args[2]
    assert prog.out_treedef == args[3] and (prog.out_leaves is None) == (args[4] is None)
    assert prog.devices == args[5]
    refs = prog.fun.shared if isinstance(prog.fun, UnloadedFunction) else ()
    leaves = list(prog.in_leaves) + list(prog.out_leaves or ())
    assert_one_object_per_value(shared_objects(prog.devices, *refs, *leaves))


@st.composite
def values(draw):
    """A description and a value's tree over its objects and the other value leaves."""
    desc = draw(models())
    count = sum(len(desc[k]) for k in ("lists", "meshes", "shardings", "leaves")) + 4
    return desc, draw(tree(count))


def _flat(value):
    return jax.tree_util.tree_flatten(value, is_leaf=lambda o: isinstance(o, prng.PRNGImpl))


@SETTINGS
@given(values())
def test_values_come_back_equal_with_one_object_per_value(devices, desc_tree):
    value = build_value(*desc_tree)
    data = serialize_value(value)
    back = deserialize_value(data, allowed_modules={"property_models"})
    (leaves, treedef), (got, got_treedef) = _flat(value), _flat(back)
    assert got_treedef == treedef
    assert [type(g) for g in got] == [type(w) for w in leaves] and got == leaves
    assert serialize_value(back) == data
    assert_one_object_per_value(shared_objects(*(g for g in got if codec_of(g) is not None)))
