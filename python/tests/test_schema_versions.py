"""Schema minor versions: what 1.1 adds is written only for a 1.1 reader and read only from 1.1
(and 1.2's value payloads only for and from 1.2: test_values.py).

The schema declares which minor version introduced each construct (version.proto's
`since` and `field_since`); src/schema-version.ts and colocated_wire/schema_version.py
read them from the descriptors, and both languages give the same errors at the same paths.
"""

import jax
import numpy as np
import pytest
import vector_cases
from jax._src.random import prng
from test_vectors import _vector

from colocated_wire import (
    SCHEMA_MINOR_VERSION,
    DecodeError,
    EncodeError,
    LiftError,
    deserialize_program,
    deserialize_specs,
    serialize_program,
    serialize_specs,
)
from colocated_wire._gen.colocated.v1 import payload_pb2, table_pb2, tree_pb2
from colocated_wire.entries.array_spec import DTYPE_NAMES, DTYPE_SINCE, DTYPES, KEY_TYPE_SINCE
from colocated_wire.schema_version import enum_since, field_since

IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


def _new_dtypes():
    """Each dtype of 1.1, as JAX names it: the numpy-like ones and a key of each impl."""
    names = [DTYPE_NAMES[v] for v, since in DTYPE_SINCE.items() if since == 1]
    plain = [vector_cases._dtype(n) for n in names if n != "key"]
    keys = [jax.random.key(0, impl=impl).dtype for impl in IMPLS]
    return plain + keys


NEW_DTYPES = _new_dtypes()


def _one(dtype, shape=(2,)):
    return jax.tree.structure([0]), [jax.ShapeDtypeStruct(shape, dtype)]


def test_the_schema_says_what_1_1_added():
    new = {DTYPE_NAMES[v] for v, since in DTYPE_SINCE.items() if since == 1}
    assert new == {*vector_cases.DTYPE_NAMES_1_1, "key"}
    assert len(new) == 7
    assert set(DTYPE_SINCE.values()) == {0, 1} and KEY_TYPE_SINCE == 1
    assert set(DTYPES) == set(table_pb2.DType.values()) - {table_pb2.D_TYPE_UNSPECIFIED}


def test_the_schema_says_what_1_2_added():
    kinds = enum_since(payload_pb2.PayloadKind.DESCRIPTOR)
    assert {k: v for k, v in kinds.items() if v} == {payload_pb2.PAYLOAD_KIND_VALUE: 2}


def test_the_schema_says_what_1_3_added():
    assert field_since(payload_pb2.Header.DESCRIPTOR, "writer") == 3
    assert SCHEMA_MINOR_VERSION == 3


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
def test_a_1_0_target_refuses_each_new_dtype(dtype):
    name = "key" if isinstance(dtype, prng.KeyTy) else str(jax.numpy.dtype(dtype).name)
    name = "float0" if dtype == jax.dtypes.float0 else name
    with pytest.raises(EncodeError) as info:
        serialize_specs(*_one(dtype), target_minor_version=0)
    assert info.value.path == "specs.leaves[0].dtype"
    assert str(info.value) == (
        f"specs.leaves[0].dtype: dtype {name} needs colocated.v1.1; the target is 1.0"
    )


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
def test_each_new_dtype_round_trips_for_a_1_1_reader(dtype):
    for target, header in ((None, SCHEMA_MINOR_VERSION), (1, 1)):
        data = serialize_specs(*_one(dtype, (3, 2)), target_minor_version=target)
        assert payload_pb2.SpecsPayload.FromString(data).header.minor_version == header
        _, (leaf,) = deserialize_specs(data)
        assert leaf == jax.ShapeDtypeStruct((3, 2), dtype)
        assert deserialize_specs(data, max_minor_version=header)[1] == (leaf,)
    newer = f"minor version {SCHEMA_MINOR_VERSION} is newer than the agreed 1"
    with pytest.raises(DecodeError, match=newer):
        deserialize_specs(serialize_specs(*_one(dtype)), max_minor_version=1)


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
def test_a_1_1_payload_is_refused_by_a_1_0_reader_naming_1_1(dtype):
    data = serialize_specs(*_one(dtype), target_minor_version=1)
    with pytest.raises(DecodeError) as info:
        deserialize_specs(data, max_minor_version=0)
    assert (info.value.path, info.value.code) == ("header.minor_version", "unsupported-version")
    assert info.value.detail == "minor version 1 is newer than the agreed 0"


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=str)
def test_a_new_dtype_under_a_1_0_header_is_refused(dtype):
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(*_one(dtype)))
    msg.header.minor_version = 0
    with pytest.raises(DecodeError) as info:
        deserialize_specs(msg.SerializeToString())
    want = ("table[0].array_spec.dtype", "unsupported-version")
    assert (info.value.path, info.value.code) == want
    assert info.value.detail.endswith("needs colocated.v1.1; the header says 1.0")


def test_a_key_type_under_a_1_0_header_is_refused():
    data = serialize_specs(*_one(np.float32), target_minor_version=0)
    msg = payload_pb2.SpecsPayload.FromString(data)
    msg.table.entries[0].array_spec.key_type.impl = "threefry2x32"
    with pytest.raises(DecodeError) as info:
        deserialize_specs(msg.SerializeToString())
    assert (info.value.path, info.value.code) == (
        "table[0].array_spec.key_type",
        "unsupported-version",
    )
    assert info.value.detail == "key_type needs colocated.v1.1; the header says 1.0"


def test_a_program_names_the_part_that_needs_1_1(devices):
    key = jax.ShapeDtypeStruct((2,), jax.random.key(0).dtype)
    f32 = jax.ShapeDtypeStruct((2,), np.float32)
    treedef = jax.tree.structure([0])
    for path, ins, outs in (
        ("input_specs.leaves[0]", [key], [f32]),
        ("output_specs.leaves[0]", [f32], [key]),
    ):
        program = (vector_cases.double, treedef, ins, treedef, outs, devices[:1])
        with pytest.raises(EncodeError) as info:
            serialize_program(*program, target_minor_version=0)
        assert info.value.path == f"{path}.dtype"
        assert info.value.detail == "dtype key needs colocated.v1.1; the target is 1.0"
        data = serialize_program(*program)
        got = deserialize_program(data, allowed_modules={"vector_cases"})
        assert (got.in_leaves, got.out_leaves) == (tuple(ins), tuple(outs))


def test_a_1_0_target_writes_the_bytes_of_1_0(devices):
    treedef, leaves = vector_cases.memory_kinds(devices)
    old = serialize_specs(treedef, leaves, target_minor_version=0)
    assert old == _vector("memory_kinds")
    new = payload_pb2.SpecsPayload.FromString(serialize_specs(treedef, leaves))
    assert new.header.minor_version == SCHEMA_MINOR_VERSION
    new.header.minor_version = 0
    # The list's four leaves are one LEAVES run from 1.1; the rest is as 1.0 writes it.
    assert list(new.specs.treedef.kinds) == [tree_pb2.NODE_KIND_LIST, tree_pb2.NODE_KIND_LEAVES]
    new.specs.treedef.CopyFrom(payload_pb2.SpecsPayload.FromString(old).specs.treedef)
    assert new.SerializeToString(deterministic=True) == old


@pytest.mark.parametrize("target", [-1, SCHEMA_MINOR_VERSION + 1, True, 1.0, "1"])
def test_a_target_this_encoder_cannot_write_is_refused(target):
    with pytest.raises(EncodeError) as info:
        serialize_specs(*_one(np.float32), target_minor_version=target)
    assert info.value.path == "header.minor_version"
    assert info.value.detail == f"target minor version {target}: this encoder writes 1.0 to 1.3"


def test_a_newer_payload_carried_through_keeps_its_version_or_refuses_an_older_target(devices):
    data = _vector("newer_minor_version")
    assert payload_pb2.SpecsPayload.FromString(data).header.minor_version == 4  # newer than 1.3
    treedef, leaves = deserialize_specs(data)
    assert serialize_specs(treedef, leaves) == data
    with pytest.raises(EncodeError) as info:
        serialize_specs(treedef, leaves, target_minor_version=SCHEMA_MINOR_VERSION)
    assert info.value.path == "header.minor_version"
    assert info.value.detail == "carries fields of colocated.v1.4; the target is 1.3"


def _key_payload(impl: str, key_shape: list[int]) -> bytes:
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(*_one(jax.random.key(0).dtype)))
    key_type = msg.table.entries[0].array_spec.key_type
    key_type.impl = impl
    key_type.key_shape[:] = key_shape
    return msg.SerializeToString()


def test_a_key_of_an_impl_this_process_lacks_is_a_lift_error_naming_it():
    with pytest.raises(LiftError, match=r"table\[0\]\.array_spec: .*'no_such_prng'"):
        deserialize_specs(_key_payload("no_such_prng", [2]))
    with pytest.raises(LiftError, match=r"'rbg' has key shape \(4,\) here, not \(2,\)"):
        deserialize_specs(_key_payload("rbg", [2]))


def test_a_registered_custom_impl_travels_by_name():
    impl = vector_cases._custom_prng()
    dtype = prng.KeyTy(impl)
    _, (leaf,) = deserialize_specs(serialize_specs(*_one(dtype)))
    assert leaf.dtype == dtype and leaf.dtype._impl is impl


def test_an_unregistered_custom_impl_is_refused_at_its_key_type():
    unregistered = prng.PRNGImpl((2,), None, None, None, None, name="nowhere", tag="nw")
    with pytest.raises(EncodeError) as info:
        serialize_specs(*_one(prng.KeyTy(unregistered)))
    assert info.value.path == "specs.leaves[0].key_type.impl"
    assert "'nowhere' is not registered" in info.value.detail


@pytest.mark.parametrize("dtype", [np.dtype("U3"), np.dtype(object), np.dtype("V4")], ids=str)
def test_a_dtype_the_wire_lacks_is_an_encode_error_with_a_path(dtype):
    with pytest.raises(EncodeError) as info:
        serialize_specs(*_one(dtype))
    assert info.value.path == "specs.leaves[0].dtype"
    assert info.value.detail == f"dtype {dtype} has no colocated.v1 DType"
