"""serialize_value / deserialize_value (colocated.v1.2): each leaf form, the table, and the
errors of bad values and bad bytes, with their paths."""

import collections
import dataclasses
import threading

import jax
import numpy as np
import pytest
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax._src.random import prng
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P
from vector_cases import _custom_prng, add_one

from colocated_wire import (
    SCHEMA_MINOR_VERSION,
    DecodeError,
    DecodeLimits,
    EncodeError,
    FunctionNotAllowedError,
    LiftError,
    PickleNotAllowedError,
    UnknownEntry,
    UnknownValue,
    deserialize_specs,
    deserialize_value,
    serialize_specs,
    serialize_value,
)
from colocated_wire._gen.colocated.v1 import payload_pb2, table_pb2, tree_pb2

SDS = jax.ShapeDtypeStruct
FRY = prng.prngs["threefry2x32"]
Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Holder:
    """An object with no wire form that holds table objects."""

    mesh: object
    sharding: object
    spec: object


def _mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def _message(data: bytes) -> payload_pb2.ValuePayload:
    return payload_pb2.ValuePayload.FromString(data)


def _same(got, want):
    """Equal leaf by leaf, of the same types, in the same structure."""
    is_leaf = lambda o: isinstance(o, prng.PRNGImpl)  # noqa: E731
    (g, gt), (w, wt) = (jax.tree_util.tree_flatten(x, is_leaf=is_leaf) for x in (got, want))
    assert gt == wt and [type(a) for a in g] == [type(b) for b in w] and g == w


def _round_trip(value, **read):
    data = serialize_value(value)
    got = deserialize_value(data, **read)
    _same(got, value)
    assert serialize_value(got) == data  # canonical
    return got, _message(data)


# ---- the leaf forms ---------------------------------------------------------------------------


def test_a_mesh_is_one_entry_after_its_device_list(devices):
    got, msg = _round_trip(_mesh(devices))
    kinds = [e.WhichOneof("kind") for e in msg.table.entries]
    assert kinds == ["device_list", "mesh"] and [leaf.entry for leaf in msg.value.leaves] == [1]
    assert msg.header == payload_pb2.Header(
        major_version=1, minor_version=SCHEMA_MINOR_VERSION, kind=payload_pb2.PAYLOAD_KIND_VALUE
    )


def test_equal_shardings_are_one_entry_and_one_object(devices):
    mesh = _mesh(devices)
    other = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))  # equal, not the same
    value = [NamedSharding(mesh, P("x")), NamedSharding(other, P("x")), NamedSharding(mesh, P())]
    got, msg = _round_trip(value)
    assert len(msg.table.entries) == 4  # list, mesh, two shardings
    assert got[0] is got[1] and got[0].mesh is got[2].mesh


def test_every_sharding_kind_and_a_device_list(devices):
    hlo = xc.HloSharding.replicate()
    value = {
        "gspmd": sharding_impls.GSPMDSharding(tuple(devices[8:12]), hlo),
        "single": SingleDeviceSharding(devices[5]),
        "list": xc.DeviceList((devices[3], devices[1])),
        "spec": SDS((8, 4), np.float32, sharding=NamedSharding(_mesh(devices), P("x", "y"))),
        "bare": SDS((), np.int8, weak_type=True),
    }
    got, msg = _round_trip(value)
    assert all(leaf.WhichOneof("leaf") == "entry" for leaf in msg.value.leaves)
    assert list(got["list"]) == [devices[3], devices[1]]


def test_dtypes_key_dtypes_and_impls_by_name(devices):
    custom = _custom_prng()
    value = (
        np.dtype("float32"),
        jax.numpy.dtype("bfloat16"),
        np.dtypes.StringDType(),
        jax.dtypes.float0,
        prng.KeyTy(FRY),
        jax.random.key(0, impl="rbg").dtype,
        prng.KeyTy(custom),
        FRY,
        custom,
        SDS((3,), prng.KeyTy(prng.prngs["unsafe_rbg"])),
    )
    got, msg = _round_trip(value)
    forms = [leaf.WhichOneof("leaf") for leaf in msg.value.leaves]
    assert forms == ["dtype"] * 7 + ["prng_impl"] * 2 + ["entry"]
    assert got[7] is FRY and got[8] is custom  # the registered impls themselves
    key = msg.value.leaves[4].dtype
    assert (key.dtype, key.key_type.impl, list(key.key_type.key_shape)) == (
        table_pb2.D_TYPE_KEY,
        "threefry2x32",
        [2],
    )
    assert not msg.value.leaves[0].dtype.HasField("key_type")


def test_the_impl_jax_random_key_impl_names_reads_back_as_jax_finds_it():
    key = jax.random.key(0, impl="rbg")
    impl = prng.prngs[jax.random.key_impl(key)]
    got, _ = _round_trip([impl, key.dtype])
    assert got[0] is impl and got[1] == key.dtype and got[1]._impl is impl


def test_a_function_by_name_resolves_where_its_module_is_allowed():
    value = (add_one, None, None, None, None, None)
    data = serialize_value(value)
    assert _message(data).value.leaves[0].function == payload_pb2.FunctionRef(
        module="vector_cases", qualname="add_one"
    )
    assert deserialize_value(data, allowed_modules={"vector_cases"}) == value
    assert deserialize_value(data, allowed_functions={"vector_cases.add_one"})[0] is add_one
    with pytest.raises(FunctionNotAllowedError, match=r"^value\.leaves\[0\]\.function: ") as e:
        deserialize_value(data)
    assert (e.value.module, e.value.qualname) == ("vector_cases", "add_one")


def test_containers_of_every_kind_hold_leaves_of_every_form(devices):
    mesh = _mesh(devices)
    value = {
        "tuple": (mesh, np.dtype("int8")),
        "list": [FRY, add_one],
        "named": Point(x=mesh, y=None),
        "ints": {1: mesh, 2: [np.dtype("bool")]},
        "ordered": collections.OrderedDict([("b", mesh), ("a", None)]),
        "empty": ((), [], {}),
    }
    got, _ = _round_trip(value, allowed_modules={"vector_cases"})
    assert type(got["named"]) is Point and list(got["ordered"]) == ["b", "a"]


def test_a_subtree_without_leaves_repeats_and_leaves_are_never_left_out(devices):
    mesh = _mesh(devices)
    value = [((), [None]), ((), [None]), (mesh, mesh), (mesh, mesh)]
    _, msg = _round_trip(value)
    assert tree_pb2.NODE_KIND_REPEAT in msg.value.treedef.kinds
    assert len(msg.value.leaves) == 4  # each leaf written, equal ones too


# ---- pickles ----------------------------------------------------------------------------------


def test_what_has_no_form_travels_pickled_with_its_table_objects_as_refs(devices):
    mesh = _mesh(devices)
    sharding = NamedSharding(mesh, P("x"))
    spec = SDS((8,), np.float32, sharding=sharding)
    value = [mesh, Holder(mesh, sharding, spec), lambda a: a + 1, np.arange(3), P("x")]
    data = serialize_value(value, allow_pickle=True)
    msg = _message(data)
    assert [leaf.WhichOneof("leaf") for leaf in msg.value.leaves] == ["entry"] + ["pickled"] * 4
    assert len(msg.value.leaves[1].pickled.refs) == 3  # the mesh, the sharding and the spec
    got = deserialize_value(data, allow_pickle=True)
    assert got[1].mesh is got[0] and got[1].sharding.mesh is got[0]
    assert got[1].spec == spec and got[1].spec.sharding is got[1].sharding
    assert got[2](1) == 2 and list(got[3]) == [0, 1, 2] and got[4] == P("x")


def test_a_local_function_pickled_still_runs():
    def scale(a, k=3):
        return a * k

    got = deserialize_value(serialize_value([scale], allow_pickle=True), allow_pickle=True)
    assert got[0](2) == 6


def test_without_allow_pickle_a_leaf_without_form_is_refused_at_its_leaf(devices):
    for value, path in (
        ([_mesh(devices), lambda a: a], "value.leaves[1]"),
        ({"a": {"b": 3}}, "value.leaves[0]"),
        (P("x"), "value.leaves[0]"),
    ):
        with pytest.raises(EncodeError, match=r"allow_pickle=True") as e:
            serialize_value(value)
        assert e.value.path == path


def test_a_pickled_leaf_is_read_only_with_allow_pickle():
    data = serialize_value((1, [2.5]), allow_pickle=True)
    with pytest.raises(PickleNotAllowedError, match=r"allow_pickle=True") as e:
        deserialize_value(data)
    assert str(e.value).startswith("value.leaves[0].pickled: ")
    assert isinstance(e.value, LiftError)
    assert deserialize_value(data, allow_pickle=True) == (1, [2.5])


def test_what_does_not_pickle_is_a_type_error_at_its_leaf():
    lock = threading.Lock()
    with pytest.raises(TypeError, match="lock") as e:
        serialize_value([None, lock], allow_pickle=True)
    assert isinstance(e.value, EncodeError) and e.value.path == "value.leaves[0]"


def test_a_dtype_or_impl_a_reader_cannot_find_by_name_goes_pickled():
    unregistered = prng.PRNGImpl((2,), None, None, None, None, name="nowhere", tag="nw")
    for leaf in (np.dtype("U3"), unregistered, prng.KeyTy(unregistered), np.int32):
        with pytest.raises(EncodeError, match="allow_pickle"):
            serialize_value(leaf)
        msg = _message(serialize_value(leaf, allow_pickle=True))
        assert msg.value.leaves[0].WhichOneof("leaf") == "pickled"


# ---- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [0, 1])
def test_a_target_before_1_2_is_refused_naming_1_2(devices, target):
    with pytest.raises(EncodeError) as e:
        serialize_value(_mesh(devices), target_minor_version=target)
    assert e.value.path == "header.kind"
    assert e.value.detail == f"a value payload needs colocated.v1.2; the target is 1.{target}"


def test_a_header_before_1_2_is_refused_naming_1_2(devices):
    msg = _message(serialize_value(_mesh(devices)))
    msg.header.minor_version = 1
    for read in (deserialize_value, deserialize_specs):  # the kind's version before the kind
        with pytest.raises(DecodeError) as e:
            read(msg.SerializeToString())
        assert (e.value.path, e.value.code) == ("header.kind", "unsupported-version")
        assert e.value.detail == "a value payload needs colocated.v1.2; the header says 1.1"


@pytest.mark.parametrize("agreed", [0, 1])
def test_a_reader_agreed_on_a_version_before_1_2_reads_no_value(devices, agreed):
    data = serialize_value(_mesh(devices), target_minor_version=2)
    assert deserialize_value(data, max_minor_version=2) == _mesh(devices)
    with pytest.raises(DecodeError) as e:
        deserialize_value(data, max_minor_version=agreed)
    assert (e.value.path, e.value.code) == ("header.kind", "unsupported-version")
    assert (
        e.value.detail == f"a value payload needs colocated.v1.2; the agreed version is 1.{agreed}"
    )


def test_a_value_is_not_specs_and_specs_are_not_a_value(devices):
    with pytest.raises(DecodeError, match="is a ValuePayload, not SpecsPayload") as e:
        deserialize_specs(serialize_value(_mesh(devices)))
    assert e.value.code == "wrong-payload-kind"
    specs = serialize_specs(
        jax.tree.structure([0]), [SDS((2,), np.float32)], target_minor_version=1
    )
    for agreed in (None, 1):
        with pytest.raises(DecodeError, match="is a SpecsPayload, not ValuePayload"):
            deserialize_value(specs, max_minor_version=agreed)


def test_a_leaf_of_a_newer_kind_is_kept_and_written_back_as_it_came(devices):
    msg = _message(serialize_value([_mesh(devices), None]))
    msg.header.minor_version = 3
    msg.value.treedef.kinds[:] = [tree_pb2.NODE_KIND_LIST, tree_pb2.NODE_KIND_LEAVES]
    msg.value.treedef.arities[:] = [2, 2]
    msg.value.leaves.add().MergeFromString(b"\x32\x02\x08\x07")  # field 6: a form of 1.3
    data = msg.SerializeToString(deterministic=True)
    got = deserialize_value(data)
    assert isinstance(got[1], UnknownValue) and got[1].minor_version == 3
    assert serialize_value(got) == data  # its version kept with it
    with pytest.raises(EncodeError, match="carries fields of colocated.v1.3; the target is 1.2"):
        serialize_value(got, target_minor_version=2)


def test_an_entry_of_a_newer_kind_is_an_unknown_entry(devices):
    msg = _message(serialize_value(_mesh(devices)))
    msg.table.entries.add().MergeFromString(b"\x92\x03\x03abc")
    msg.value.leaves[0].entry = 2
    got = deserialize_value(msg.SerializeToString())
    assert isinstance(got, UnknownEntry)
    assert serialize_value(got) != msg.SerializeToString()  # a new model: only the entry used
    assert deserialize_value(serialize_value(got)) == got


# ---- bad bytes --------------------------------------------------------------------------------


def _value_of(devices) -> payload_pb2.ValuePayload:
    """A payload of every leaf form: entry, dtype, key dtype, impl, function, pickled."""
    value = [_mesh(devices), np.dtype("float32"), prng.KeyTy(FRY), FRY, add_one, 7]
    return _message(serialize_value(value, allow_pickle=True))


def _decode_error(msg, **options) -> DecodeError:
    with pytest.raises(DecodeError) as e:
        deserialize_value(msg.SerializeToString(), allowed_modules={"vector_cases"}, **options)
    return e.value


BAD = {
    "entry out of range": (
        lambda m: setattr(m.value.leaves[0], "entry", 9),
        ("value.leaves[0].entry", "reference-out-of-range"),
    ),
    "a leaf too many": (
        lambda m: m.value.leaves.add().CopyFrom(m.value.leaves[0]),
        ("value.leaves", "invalid-tree"),
    ),
    "a leaf too few": (lambda m: m.value.leaves.pop(), ("value.leaves", "invalid-tree")),
    "no form": (lambda m: m.value.leaves[2].Clear(), ("value.leaves[2]", "missing")),
    "no dtype": (
        lambda m: setattr(m.value.leaves[1].dtype, "dtype", 0),
        ("value.leaves[1].dtype.dtype", "unknown-enum"),  # as TypeScript and an ArraySpec
    ),
    "unknown dtype": (
        lambda m: setattr(m.value.leaves[1].dtype, "dtype", 999),
        ("value.leaves[1].dtype.dtype", "unknown-enum"),
    ),
    "key type on float32": (
        lambda m: m.value.leaves[1].dtype.key_type.CopyFrom(m.value.leaves[2].dtype.key_type),
        ("value.leaves[1].dtype.key_type", "invalid-value"),
    ),
    "key dtype without key type": (
        lambda m: m.value.leaves[2].dtype.ClearField("key_type"),
        ("value.leaves[2].dtype.key_type", "missing"),
    ),
    "key type without impl": (
        lambda m: setattr(m.value.leaves[2].dtype.key_type, "impl", ""),
        ("value.leaves[2].dtype.key_type.impl", "invalid-value"),
    ),
    "impl without name": (
        lambda m: setattr(m.value.leaves[3].prng_impl, "impl", ""),
        ("value.leaves[3].prng_impl.impl", "invalid-value"),
    ),
    "impl key shape past the rank limit": (
        lambda m: m.value.leaves[3].prng_impl.key_shape.extend([1] * 64),
        ("value.leaves[3].prng_impl.key_shape", "limit-exceeded"),
    ),
    "function without module": (
        lambda m: setattr(m.value.leaves[4].function, "module", ""),
        ("value.leaves[4].function.module", "missing"),
    ),
    "function without qualname": (
        lambda m: setattr(m.value.leaves[4].function, "qualname", ""),
        ("value.leaves[4].function.qualname", "missing"),
    ),
    "pickled ref out of range": (
        lambda m: m.value.leaves[5].pickled.refs.append(5),
        ("value.leaves[5].pickled.refs[0]", "reference-out-of-range"),
    ),
    "no value": (lambda m: m.ClearField("value"), ("value", "missing")),
    "no treedef": (lambda m: m.value.ClearField("treedef"), ("value.treedef", "missing")),
    "no table": (lambda m: m.ClearField("table"), ("table", "missing")),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_references_and_fields_are_decode_errors_with_paths(devices, case):
    msg = _value_of(devices)
    modules = {"vector_cases"}
    assert deserialize_value(msg.SerializeToString(), allow_pickle=True, allowed_modules=modules)
    spoil, want = BAD[case]
    spoil(msg)
    error = _decode_error(msg, allow_pickle=True)
    assert (error.path, error.code) == want


@pytest.mark.parametrize(
    ("impl", "key_shape", "match"),
    [
        ("no_such_prng", [2], r"'no_such_prng' is not registered in this process"),
        ("rbg", [2], r"'rbg' has key shape \(4,\) here, not \(2,\)"),
    ],
)
def test_an_impl_this_process_lacks_is_a_lift_error_at_its_leaf(devices, impl, key_shape, match):
    for index, field in ((2, "dtype"), (3, "prng_impl")):
        msg = _value_of(devices)
        key_type = msg.value.leaves[index].dtype.key_type if index == 2 else None
        key_type = key_type or msg.value.leaves[index].prng_impl
        key_type.impl, key_type.key_shape[:] = impl, key_shape
        with pytest.raises(LiftError, match=match) as e:
            data = msg.SerializeToString()
            deserialize_value(data, allow_pickle=True, allowed_modules={"vector_cases"})
        assert str(e.value).startswith(f"value.leaves[{index}].{field}: ")


def test_a_pickle_that_refers_past_its_refs_is_a_lift_error(devices):
    mesh = _mesh(devices)
    msg = _message(serialize_value([Holder(mesh, None, None)], allow_pickle=True))
    assert list(msg.value.leaves[0].pickled.refs) == [1]
    msg.value.leaves[0].pickled.refs[:] = []  # its persistent id 0 now names nothing
    with pytest.raises(LiftError, match=r"^value\.leaves\[0\]\.pickled: .*not a position in refs"):
        deserialize_value(msg.SerializeToString(), allow_pickle=True)


def test_truncated_bytes_are_malformed(devices):
    data = _value_of(devices).SerializeToString()
    for cut in (1, 5, len(data) // 2, len(data) - 1):
        with pytest.raises(DecodeError) as e:
            deserialize_value(data[:cut], allow_pickle=True)
        assert e.value.code in ("malformed", "unsupported-version"), (cut, e.value)


def test_the_wire_scan_bounds_a_values_leaves_and_a_pickles_refs(devices):
    data = serialize_value([7, _mesh(devices), _mesh(devices)], allow_pickle=True)
    limits = DecodeLimits(max_tree_nodes=2)  # the tree's two written nodes: LIST, LEAVES
    with pytest.raises(DecodeError) as e:
        deserialize_value(data, limits=limits, allow_pickle=True)
    assert (e.value.path, e.value.code) == ("value.leaves", "limit-exceeded")
    msg = _message(data)
    msg.value.leaves[0].pickled.refs.extend([0, 1])
    with pytest.raises(DecodeError) as e:
        deserialize_value(msg.SerializeToString(), limits=DecodeLimits(max_table_entries=1))
    assert (e.value.path, e.value.code) == ("table.entries", "limit-exceeded")
    msg.ClearField("table")
    with pytest.raises(DecodeError) as e:
        deserialize_value(msg.SerializeToString(), limits=DecodeLimits(max_table_entries=1))
    assert (e.value.path, e.value.code) == ("value.leaves[0].pickled.refs", "limit-exceeded")
