"""Payloads from a newer minor version: unknown fields and unknown entry kinds."""

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import (
    DecodeError,
    LiftError,
    UnknownEntry,
    deserialize_program,
    deserialize_specs,
    serialize_program,
    serialize_specs,
)
from colocated_wire._gen.colocated.v1 import payload_pb2

SDS = jax.ShapeDtypeStruct
# Field 99, varint 1 and field 98, bytes "hi": fields no v1.0 message has.
UNKNOWN = b"\x98\x06\x01\x92\x06\x02hi"
# An Entry whose only content is field 50 (a kind added later).
UNKNOWN_ENTRY = b"\x92\x03\x03abc"


def payload(devices):
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    leaves = [SDS((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("x")))]
    return jax.tree_util.tree_structure([0]), leaves


def test_unknown_fields_everywhere_are_ignored(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(td, leaves))
    top_level = msg.SerializeToString() + UNKNOWN
    for sub in (msg.header, msg.specs, msg.specs.treedef, msg.table.entries[2].named_sharding):
        sub.MergeFromString(UNKNOWN)
    msg.table.entries[1].mesh.MergeFromString(UNKNOWN)
    for data in (top_level, msg.SerializeToString()):
        td2, leaves2 = deserialize_specs(data)
        assert td2 == td and list(leaves2) == leaves


def test_newer_minor_version_is_read(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(td, leaves))
    msg.header.minor_version = 7
    assert deserialize_specs(msg.SerializeToString())[1] == tuple(leaves)
    with pytest.raises(DecodeError) as info:
        deserialize_specs(msg.SerializeToString(), max_minor_version=6)
    assert (info.value.code, info.value.path) == ("unsupported-version", "header.minor_version")


def add_unknown_entry(msg):
    entry = msg.table.entries.add()
    entry.MergeFromString(UNKNOWN_ENTRY)
    assert entry.WhichOneof("kind") is None
    return len(msg.table.entries) - 1


def test_unknown_entry_as_a_leaf_sharding(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(td, leaves))
    index = add_unknown_entry(msg)
    spec = msg.table.entries.add().array_spec
    spec.shape.extend([3])
    spec.dtype = 15
    spec.sharding = index
    msg.specs.leaves[0] = index + 1
    _, out = deserialize_specs(msg.SerializeToString())
    assert isinstance(out[0].sharding, UnknownEntry)
    assert out[0].sharding.entry_bytes == UNKNOWN_ENTRY
    with pytest.raises(TypeError, match="unknown"):
        out[0].sharding.num_devices  # noqa: B018
    # The unknown entry is written back as it came.
    again = serialize_specs(*deserialize_specs(msg.SerializeToString()))
    assert UNKNOWN_ENTRY in again


def test_unknown_entry_where_a_kind_is_required(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(td, leaves))
    index = add_unknown_entry(msg)
    msg.specs.leaves[0] = index
    with pytest.raises(DecodeError) as info:
        deserialize_specs(msg.SerializeToString())
    assert (info.value.code, info.value.path) == ("wrong-entry-kind", "specs.leaves[0]")
    msg.specs.leaves[0] = 3
    mesh = msg.table.entries.add().mesh
    mesh.CopyFrom(msg.table.entries[1].mesh)
    mesh.device_list = index
    with pytest.raises(DecodeError) as info:
        deserialize_specs(msg.SerializeToString())
    assert (info.value.code, info.value.path) == ("wrong-entry-kind", "table[5].mesh.device_list")


def test_unknown_entry_as_a_pickled_ref(devices):
    td, leaves = payload(devices)
    data = serialize_program(lambda x: x, td, leaves, None, None, devices[:8])
    msg = payload_pb2.ProgramPayload.FromString(data)
    index = add_unknown_entry(msg)
    msg.function.pickled.refs.append(index)
    prog = deserialize_program(msg.SerializeToString())
    assert isinstance(prog.fun.shared[-1], UnknownEntry)


def test_unknown_function_kind(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.ProgramPayload.FromString(
        serialize_program(lambda x: x, td, leaves, None, None, devices[:8])
    )
    msg.function.Clear()
    msg.function.MergeFromString(b"\x1a\x00")  # field 3: a function kind added later
    prog = deserialize_program(msg.SerializeToString())
    with pytest.raises(RuntimeError, match="does not know"):
        prog.fun()


def test_unknown_custom_node_type_is_a_lift_error(devices):
    td, leaves = payload(devices)
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(td, leaves))
    t = msg.specs.treedef
    t.kinds.insert(0, 7)  # CUSTOM around the list
    t.arities.insert(0, 1)
    t.node_types.add(name="nowhere.Custom")
    t.type_refs.append(0)
    t.node_data.append(b"")
    with pytest.raises(LiftError, match="nowhere.Custom"):
        deserialize_specs(msg.SerializeToString())
