"""Payloads of a newer minor version go through deserialize and serialize unchanged.

test/corpus/newer/ holds payloads TypeScript wrote (test/corpus-newer.test.ts):
new fields in every message, after the known ones and sorted by tag, new
entry kinds and a new function kind. Both languages give back the same bytes.
A value (1.2) keeps a leaf of a new kind; its other new fields Python does not
carry (the value may be a Mesh, which cannot remember its payload).
"""

import json
import pathlib

import jax
import pytest
from google.protobuf import unknown_fields
from jax._src.random import prng
from jax.sharding import Mesh, NamedSharding

from colocated_wire import (
    UnknownEntry,
    UnknownValue,
    UnloadedFunction,
    deserialize_program,
    deserialize_specs,
    deserialize_value,
    serialize_program,
    serialize_specs,
    serialize_value,
)
from colocated_wire._gen.colocated.v1 import payload_pb2

NEWER = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "newer"


def read(name):
    return (NEWER / f"{name}.bin").read_bytes()


def test_specs_come_back_byte_for_byte(devices):
    data = read("specs")
    treedef, leaves = deserialize_specs(data)
    assert isinstance(leaves[-1].sharding, UnknownEntry)
    assert serialize_specs(treedef, leaves) == data


def test_a_key_trie_comes_back_byte_for_byte_with_its_new_fields(devices):
    data = read("specs-key-trie")
    trie = payload_pb2.SpecsPayload.FromString(data).specs.treedef.key_trie
    assert trie.nodes and len(unknown_fields.UnknownFieldSet(trie)) > 0
    treedef, leaves = deserialize_specs(data)
    assert "params.layers.2.mlp.weight" in str(treedef)
    assert serialize_specs(treedef, leaves) == data


def test_leaf_copies_come_back_byte_for_byte_with_the_new_fields_of_their_specs(devices):
    data = read("specs-leaf-copies")
    msg = payload_pb2.SpecsPayload.FromString(data).specs
    assert len(msg.leaf_copies) >= 3 and len(unknown_fields.UnknownFieldSet(msg)) > 0
    treedef, leaves = deserialize_specs(data)
    assert len(leaves) == treedef.num_leaves == 70
    # The cycle of 4 shardings the copy makes, from its written start to its end.
    assert [x.sharding for x in leaves[66:]] == [x.sharding for x in leaves[6:10]]
    assert serialize_specs(treedef, leaves) == data


@pytest.mark.parametrize(
    "name", ["program-by-name", "program-pickled", "program-new-function-kind"]
)
def test_programs_come_back_byte_for_byte(devices, name):
    data = read(name)
    prog = deserialize_program(data, allowed_modules={"json"})
    assert serialize_program(*prog) == data
    if name == "program-by-name":
        assert prog.fun is json.dumps


def test_a_new_function_kind_is_kept_unloaded(devices):
    prog = deserialize_program(read("program-new-function-kind"))
    assert isinstance(prog.fun, UnloadedFunction) and prog.fun.unknown


def test_the_header_keeps_its_minor_version(devices):
    data = read("specs")
    again = serialize_specs(*deserialize_specs(data))
    assert payload_pb2.SpecsPayload.FromString(again).header.minor_version == 3


def test_new_leaves_are_a_new_model(devices):
    data = read("specs")
    treedef, leaves = deserialize_specs(data)
    fresh = serialize_specs(treedef, list(leaves))
    assert fresh != data and len(fresh) < len(data)
    # Still readable, and the entry of a new kind still travels with the leaf that uses it.
    assert deserialize_specs(fresh)[1][-1].sharding == leaves[-1].sharding


def test_decoded_leaves_flatten_like_a_tuple(devices):
    _, leaves = deserialize_specs(read("specs"))
    assert isinstance(leaves, tuple) and leaves == tuple(leaves)
    assert jax.tree_util.tree_leaves(leaves) == list(leaves)


def test_equal_entries_of_a_new_kind_become_one(devices):
    # Found by the fuzzer: unknown fields were grafted by position after equal entries merged.
    msg = payload_pb2.SpecsPayload.FromString(read("specs"))
    for raw in (b"\xf2\x01\x02\x08\x09", b"\xf2\x01\x02\x08\x09", b""):
        msg.table.entries.add().MergeFromString(raw)
    data = msg.SerializeToString()
    once = serialize_specs(*deserialize_specs(data))
    assert serialize_specs(*deserialize_specs(once)) == once
    kinds = [e.SerializeToString() for e in payload_pb2.SpecsPayload.FromString(once).table.entries]
    assert kinds[-2:] == [b"\xf2\x01\x02\x08\x09", b""]


def test_a_value_keeps_its_leaf_of_a_new_kind_and_its_version(devices):
    data = read("value")
    got = deserialize_value(data, allow_pickle=True)  # its pickle is b"\x80\x05N." (None)
    mesh, shared, impl, unpickled, unknown = got
    assert (
        type(mesh) is Mesh and shared["s"].mesh is mesh and isinstance(shared["s"], NamedSharding)
    )
    assert shared["d"] == prng.KeyTy(prng.prngs["threefry2x32"]) and impl is prng.prngs["rbg"]
    assert unpickled is None and isinstance(unknown, UnknownValue) and unknown.minor_version == 3
    once = serialize_value(got)
    assert payload_pb2.ValuePayload.FromString(once).header.minor_version == 3
    assert serialize_value(deserialize_value(once)) == once
    assert payload_pb2.ValuePayload.FromString(once).value.leaves[-1].SerializeToString() == (
        payload_pb2.ValuePayload.FromString(data).value.leaves[-1].SerializeToString()
    )
