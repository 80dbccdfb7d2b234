"""The conformance cases, built from real JAX objects.

test/vector-cases.ts builds the same cases from the TypeScript model; both
must give the committed bytes in test/vectors/. Each case returns the
arguments of serialize_specs or serialize_program, or the value of
serialize_value.
"""

import collections
import sys
import types

import jax
import numpy as np
from jax._src.lib import xla_client as xc
from jax._src.random import prng
from jax._src.sharding_impls import GSPMDSharding
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P
from jax_limits import AxisType, typed_mesh

from colocated_wire.payload.writer import Writer

Point = collections.namedtuple("Point", ["x", "y"])
Point.__module__ = "vector_cases"

# The dtype names of the wire enum, in its order (src/model/dtype.ts).
DTYPE_NAMES = [
    "bool", "int2", "int4", "int8", "int16", "int32", "int64",
    "uint2", "uint4", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16", "complex64", "complex128",
    "float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "string",
]  # fmt: skip


# The dtypes colocated.v1.1 adds, but key (key_arrays_1_1 has those).
DTYPE_NAMES_1_1 = ["float0", "int1", "uint1", "float6_e2m3fn", "float6_e3m2fn", "float8_e5m3fnu"]


def _custom_prng() -> prng.PRNGImpl:
    """A custom PRNG impl registered by name, as a user registers one; its numbers do not
    matter here, only its name and key shape."""
    if "custom_prng" not in prng.prngs:

        def seed(s):
            return jax.numpy.stack([s, s, s]).astype(np.uint32)

        def split(k, shape):
            return jax.numpy.broadcast_to(k, (*shape, 3))

        def random_bits(k, bit_width, shape):
            return jax.numpy.zeros(shape, np.dtype(f"uint{bit_width}"))

        def fold_in(k, data):
            return k + data

        impl = prng.PRNGImpl((3,), seed, split, random_bits, fold_in, name="custom_prng", tag="cst")
        prng.register_prng(impl)
    return prng.prngs["custom_prng"]


def _key(shape, impl, sharding=None):
    return jax.ShapeDtypeStruct(shape, prng.KeyTy(prng.prngs[impl]), sharding=sharding)


def double(x):
    """The function program_by_name sends by name."""
    return jax.tree_util.tree_map(lambda a: a * 2, x)


def _f32(shape, sharding=None):
    return jax.ShapeDtypeStruct(shape, np.float32, sharding=sharding)


def _specs(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, leaves


def _dtype(name):
    if name == "string":
        return np.dtypes.StringDType()
    if name == "float0":
        return jax.dtypes.float0
    return jax.numpy.dtype(name)


def _mesh_2x4(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def mesh_3d_transposed(devices):
    order = np.arange(16).reshape(2, 2, 4).transpose(2, 0, 1)
    explicit, auto = AxisType.Explicit, AxisType.Auto
    mesh = typed_mesh(np.array(devices)[order], ("a", "b", "c"), (explicit, auto, auto))
    return _specs(
        [
            _f32((8, 4, 2), NamedSharding(mesh, P("a", "b", "c"))),
            _f32((8,), NamedSharding(mesh, P(("b", "c")))),
        ]
    )


def partition_specs(devices):
    auto, explicit = AxisType.Auto, AxisType.Explicit
    mesh = typed_mesh(
        np.array(devices[:16]).reshape(2, 2, 2, 2),
        ("a", "b", "c", "d"),
        (auto, explicit, explicit, explicit),
    )
    spec = P(("a", "b"), None, P.UNCONSTRAINED, "c", unreduced={"d"})
    return _specs(
        {
            "tuple_unconstrained": _f32((4, 4, 4, 4), NamedSharding(mesh, spec)),
            "reduced": _f32((4,), NamedSharding(mesh, P("a", reduced={"c", "b"}))),
            "empty": _f32((2, 2), NamedSharding(mesh, P())),
            "none": _f32((2, 2), NamedSharding(mesh, P(None))),
        }
    )


def memory_kinds(devices):
    mesh = _mesh_2x4(devices)
    return _specs(
        [
            _f32((8,), NamedSharding(mesh, P("x"), memory_kind="pinned_host")),
            _f32((8,), NamedSharding(mesh, P("x"), memory_kind="unpinned_host")),
            _f32((8,), NamedSharding(mesh, P("x"), memory_kind="device")),
            _f32((2,), SingleDeviceSharding(devices[3], memory_kind="pinned_host")),
        ]
    )


def dtypes(devices):
    return _specs([jax.ShapeDtypeStruct((2, 3), _dtype(n)) for n in DTYPE_NAMES])


def dtypes_1_1(devices):
    return _specs([jax.ShapeDtypeStruct((2, 3), _dtype(n)) for n in DTYPE_NAMES_1_1])


def key_arrays_1_1(devices):
    _custom_prng()
    return _specs(
        {
            "fry": _key((), "threefry2x32"),
            "rbg": _key((3,), "rbg"),
            "urbg": _key((2, 2), "unsafe_rbg"),
            "custom": _key((5,), "custom_prng"),
            "sharded": _key((8,), "threefry2x32", NamedSharding(_mesh_2x4(devices), P("x"))),
            "float": _f32((2,)),
        }
    )


def weak_types(devices):
    return _specs(
        [
            jax.ShapeDtypeStruct((), np.float32, weak_type=True),
            jax.ShapeDtypeStruct((3,), np.int32, weak_type=True),
            jax.ShapeDtypeStruct((3,), np.int32),
        ]
    )


def trees(devices):
    def leaf(n):
        return _f32((n,))

    return _specs(
        {
            "a": None,
            "b": (leaf(1), [leaf(2), None]),
            "c": Point(x=leaf(3), y=(leaf(4),)),
            "d": {"nested": [leaf(5)]},
            "e": (),
            "f": [],
        }
    )


def trees_1_1(devices):
    """colocated.v1.1: dicts with int, bool and None keys, OrderedDict and defaultdict nodes."""

    def leaf(n):
        return _f32((n,))

    od, dd = collections.OrderedDict, collections.defaultdict
    return _specs(
        {
            "ints": {1: leaf(1), -5: leaf(2), 0: [leaf(3)]},
            "bools": {True: leaf(4), False: None},
            "mixed": {True: leaf(5), 0: leaf(6)},
            "none": {None: leaf(7)},
            "big": {-(2**63): leaf(8)},
            "ordered": od(
                [("b", leaf(9)), (2, leaf(10)), ("a", od()), (None, leaf(11)), (False, leaf(12))]
            ),
            "default": dd(list, [("y", leaf(13)), ("x", dd(None, {3: leaf(14)}))]),
            "empty": dd(list),
            "strs": {"a": leaf(15), "1": leaf(16)},
        }
    )


def dict_keys_1_1(devices):
    """colocated.v1.1: float, bytes and tuple dict keys (nested, with None, bool and bytes
    items), sorted as JAX sorts them; a tuple's items join the key pool before it."""

    def leaf(n):
        return _f32((n,))

    return _specs(
        {
            "floats": {1.5: leaf(1), -2.25: leaf(2), float("inf"): leaf(3), 1e-07: leaf(4)},
            "numbers": {0.5: leaf(5), 1: leaf(6), True and 3: leaf(7), 2.5: [leaf(8)]},
            "bytes": {b"": leaf(9), b"a\x00": leaf(10), b"\xff": leaf(11)},
            "tuples": {(): leaf(12), (1, "a"): leaf(13), (1, "b"): leaf(14), (2.5,): leaf(15)},
            "nested": {((0,), b"z"): leaf(16), ((1, (None, True)), "q"): leaf(17)},
            "same": {(1, "a"): leaf(18)},
        }
    )


def shared_subtrees_1_1(devices):
    """colocated.v1.1: layers of one structure and shardings (a fresh NamedSharding per leaf,
    equal by value), written once and repeated; runs of leaves."""
    mesh = _mesh_2x4(devices)

    def sxy():
        return NamedSharding(mesh, P("x", "y"))

    def sx():
        return NamedSharding(mesh, P("x"))

    def layer():
        return {
            "attn": {"k": _f32((8, 4), sxy()), "q": _f32((8, 4), sxy())},
            "mlp": [_f32((8,), sx()), _f32((8,), sx()), None],
            "norm": (_f32((8,)),),
        }

    return _specs(
        {
            "emb": _f32((8, 4), sxy()),
            "layers": [layer(), layer(), layer()],
            "mu": [layer(), layer(), {"attn": _f32((2,))}],
            "step": (_f32(()), _f32(()), _f32(())),
        }
    )


def key_pool_1_1(devices):
    """colocated.v1.1: the str key pool front-coded (shared prefixes, an empty key, a prefix
    that splits a UTF-8 character) and fresh dict keys, int keys after the str ones."""
    return _specs(
        {
            "": _f32((1,)),
            "decoder_block_0": _f32((1,)),
            "decoder_block_1": _f32((2,)),
            "decoder_norm": {"x": _f32((3,))},
            "ints": {1: _f32((4,)), 2: _f32((5,))},
            "é_unicode": _f32((6,)),
            "ünicode": [_f32((7,)), _f32((7,))],
        }
    )


def ordered_dicts_1_0(devices):
    """An OrderedDict and a defaultdict without a factory at a 1.0 target: the custom nodes
    (aux data as JSON) that 1.0 wrote for them."""

    def leaf(n):
        return _f32((n,))

    od = collections.OrderedDict(
        [("b", leaf(1)), (2, leaf(2)), (None, leaf(3)), (True, leaf(4)), ('q"\\\né', leaf(5))]
    )
    return _specs([od, collections.defaultdict(None, [("y", leaf(6)), ("x", leaf(7))])])


def single_device(devices):
    def on(i):
        return jax.ShapeDtypeStruct(
            (4,), jax.numpy.bfloat16, sharding=SingleDeviceSharding(devices[i])
        )

    return _specs([on(0), on(5), on(0)])


def _hlo(kind, dims=(), ids=(), replicate_last=False):
    op = xc.OpSharding()
    op.type = kind
    op.tile_assignment_dimensions = list(dims)
    op.tile_assignment_devices = list(ids)
    op.replicate_on_last_tile_dim = replicate_last
    return xc.HloSharding.from_proto(op)


def gspmd(devices):
    dl = tuple(devices[8:16])
    other, replicated, maximal = (
        xc.OpSharding.Type.OTHER,
        xc.OpSharding.Type.REPLICATED,
        xc.OpSharding.Type.MAXIMAL,
    )
    tiled = _hlo(other, (2, 2, 2), (0, 2, 4, 6, 1, 3, 5, 7), replicate_last=True)
    explicit = _hlo(other, (4, 2), (3, 1, 0, 2, 7, 5, 6, 4))
    return _specs(
        [
            _f32((8, 8), GSPMDSharding(dl, tiled)),
            _f32((8, 8), GSPMDSharding(dl, explicit)),
            _f32((8,), GSPMDSharding(dl, _hlo(replicated))),
            _f32((8,), GSPMDSharding(dl, _hlo(maximal, (), (3,)))),
        ]
    )


def program_by_name(devices):
    mesh = _mesh_2x4(devices)
    in_treedef, in_leaves = _specs(
        [_f32((8, 4), NamedSharding(mesh, P("x", "y"))), _f32((8,), NamedSharding(mesh, P("x")))]
    )
    out_treedef, out_leaves = _specs({"out": _f32((8, 4), NamedSharding(mesh, P("x", "y")))})
    return double, in_treedef, in_leaves, out_treedef, out_leaves, tuple(devices[:8])


def _train_step():
    """The example program's FunctionRef("train", "step"), as an importable module."""
    if "train" not in sys.modules:
        train = types.ModuleType("train")

        def step(x):
            return x

        step.__module__, step.__qualname__ = "train", "step"
        train.step = step
        sys.modules["train"] = train
    return sys.modules["train"].step


def example_program(devices):
    mesh = Mesh(np.array(devices[:1024]).reshape(128, 8), ("data", "model"))
    shardings = [
        NamedSharding(mesh, P("data", "model")),
        NamedSharding(mesh, P("model", None)),
        NamedSharding(mesh, P(None, "model")),
        NamedSharding(mesh, P()),
    ]
    names = ["attention", "mlp_in", "mlp_out", "norm"]
    layers = [
        {name: _f32((1024, 512), shardings[(i + j) % 4]) for j, name in enumerate(names)}
        for i in range(0, 1000, 4)
    ]
    in_treedef, in_leaves = _specs({"layers": layers})
    out_treedef, out_leaves = _specs({"loss": _f32((), shardings[3])})
    return _train_step(), in_treedef, in_leaves, out_treedef, out_leaves, tuple(devices[:1024])


def add_one(x):
    """The function value_function_1_2 sends by name."""
    return x + 1


def value_mesh_1_2(devices):
    """colocated.v1.2: a Mesh on its own, as JAX's `_serialize(mesh)`."""
    return _mesh_2x4(devices)


def value_shardings_1_2(devices):
    """colocated.v1.2: a list of shardings, two equal ones (distinct objects) one entry."""
    mesh = _mesh_2x4(devices)
    return [
        NamedSharding(mesh, P("x")),
        NamedSharding(mesh, P("y")),
        NamedSharding(mesh, P("x")),
        SingleDeviceSharding(devices[0], memory_kind="pinned_host"),
    ]


def value_dtypes_1_2(devices):
    """colocated.v1.2: dtypes (a key dtype too), a PRNG impl, a spec of keys on a sharding,
    and a device list in a dict."""
    fry = prng.prngs["threefry2x32"]
    key = prng.KeyTy(fry)
    sharding = NamedSharding(_mesh_2x4(devices), P("x"))
    return (
        np.dtype("float32"),
        np.dtype(jax.numpy.bfloat16),
        key,
        fry,
        jax.ShapeDtypeStruct((4,), key, sharding=sharding),
        {"a": xc.DeviceList((devices[3], devices[1])), "b": None},
    )


def value_function_1_2(devices):
    """colocated.v1.2: JAX's function-and-specialization tuple before its specs are known."""
    return (add_one, None, None, None, None, None)


def key_trie_1_3(devices):
    """colocated.v1.3: the str key pool as a trie of key parts. Dotted and slashed keys whose
    layers and optimizer moments repeat (written once, as repeats), a key that ends where
    others go on ("opt_state/"), the empty key, a "-" sibling of a "." label, and UTF-8
    labels."""
    tree = {"": _f32((1,)), "opt_state/": _f32((1,))}
    for prefix in ("opt_state/mu/", "opt_state/nu/", "params."):
        for i in range(3):
            tree[f"{prefix}layers.{i}.attn.b"] = _f32((4,))
            tree[f"{prefix}layers.{i}.attn.w"] = _f32((4, 4))
            tree[f"{prefix}layers.{i}.mlp.w"] = _f32((4, 8))
    tree["params.layers-count"] = _f32((1,))
    tree["params.héad/β"] = _f32((2,))
    return _specs(tree)


def leaf_copies_1_3(devices):
    """colocated.v1.3: leaf copies. A cycle of five specs six times (one copy that overlaps what
    it makes), then a leaf, a run of four from far back (a copy of its own), and a last leaf."""
    cycle = [_f32((i + 1,)) for i in range(5)]
    tail = [_f32((8,)), *cycle[:4], _f32((9,))]
    return _specs({"cycle": cycle * 6, "tail": tail})


def writer_python_1_3(devices):
    """colocated.v1.3: the header names its writer, a Python one with every part it can say."""
    return _specs([_f32((8, 4), NamedSharding(_mesh_2x4(devices), P("x", "y")))])


def writer_typescript_1_3(devices):
    """colocated.v1.3: a TypeScript writer names its library, version and language only."""
    in_treedef, in_leaves = _specs([_f32((8,), SingleDeviceSharding(devices[0]))])
    return double, in_treedef, in_leaves, None, None, tuple(devices[:1])


# The writer each 1.3 case names (the others name none).
WRITERS = {
    "writer_python_1_3": Writer("colocated-wire", "0.1.0", "python", "3.12", "0.10.2", "3.1.1"),
    "writer_typescript_1_3": Writer("colocated-wire", "0.1.0", "typescript"),
}


SPECS_CASES = {
    f.__name__: f
    for f in (
        mesh_3d_transposed,
        partition_specs,
        memory_kinds,
        dtypes,
        dtypes_1_1,
        key_arrays_1_1,
        weak_types,
        trees,
        trees_1_1,
        dict_keys_1_1,
        shared_subtrees_1_1,
        key_pool_1_1,
        key_trie_1_3,
        leaf_copies_1_3,
        ordered_dicts_1_0,
        single_device,
        gspmd,
        writer_python_1_3,
    )
}
PROGRAM_CASES = {f.__name__: f for f in (program_by_name, example_program, writer_typescript_1_3)}
# Values (colocated.v1.2), each written for the latest minor version.
VALUE_CASES = {
    f.__name__: f
    for f in (value_mesh_1_2, value_shardings_1_2, value_dtypes_1_2, value_function_1_2)
}
# The minor version each case is written for (test/vector-cases.ts): 1.0 but for these.
TARGET_MINOR_VERSIONS = {
    "dtypes_1_1": 1,
    "key_arrays_1_1": 1,
    "trees_1_1": 1,
    "dict_keys_1_1": 1,
    "shared_subtrees_1_1": 1,
    "key_pool_1_1": 1,
    "key_trie_1_3": 3,
    "leaf_copies_1_3": 3,
    **dict.fromkeys(VALUE_CASES, 2),
    **dict.fromkeys(WRITERS, 3),
}
# Written by a newer minor version; built only in TypeScript, read by both.
FOREIGN_CASES = ("newer_minor_version",)
