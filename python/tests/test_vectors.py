"""Conformance with the TypeScript side, in both directions, on test/vectors/.

The committed vectors are what TypeScript writes for test/vector-cases.ts
(checked by test/vectors.test.ts). Here the same cases, built from real JAX
objects, must serialize to those very bytes (JAX -> Python bytes), lift from
them into equal JAX objects (TypeScript bytes -> JAX), and survive a trip
through the TypeScript decoder and encoder (Python bytes -> TypeScript ->
identical bytes -> JAX). Specs, programs, and values (colocated.v1.2).
"""

import json
import subprocess
from pathlib import Path

import jax
import pytest
import vector_cases
from google.protobuf import json_format
from jax._src.random import prng
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax_limits import case_limit, skip_case
from vector_cases import (
    FOREIGN_CASES,
    PROGRAM_CASES,
    SPECS_CASES,
    TARGET_MINOR_VERSIONS,
    VALUE_CASES,
)

from colocated_wire import (
    deserialize_program,
    deserialize_specs,
    deserialize_value,
    serialize_program,
    serialize_specs,
    serialize_value,
)
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.version import SCHEMA_MINOR_VERSION

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "test" / "vectors"
ALLOWED = {"vector_cases", "train"}


def _vector(name: str) -> bytes:
    return (VECTORS / f"{name}.bin").read_bytes()


def _assert_same_specs(got, want):
    (got_treedef, got_leaves), (treedef, leaves) = got, want
    assert got_treedef == treedef
    assert list(got_leaves) == list(leaves)
    # One object per table entry: shardings with the same content are one instance.
    # (Not keyed by JAX equality: GSPMDSharding calls some distinct shardings equal.)
    by_content = {}
    for leaf in got_leaves:
        if (s := leaf.sharding) is not None:
            key = (type(s), repr(s), tuple(d.id for d in s._device_assignment))
            assert by_content.setdefault(key, s) is s


def _assert_same_program(prog, want):
    fun, in_treedef, in_leaves, out_treedef, out_leaves, devices = want
    assert prog.fun is fun
    _assert_same_specs((prog.in_treedef, prog.in_leaves), (in_treedef, in_leaves))
    if out_treedef is None:  # the output specs unknown: absent from the payload
        assert (prog.out_treedef, prog.out_leaves) == (None, None)
    else:
        _assert_same_specs((prog.out_treedef, prog.out_leaves), (out_treedef, out_leaves))
    assert tuple(prog.devices) == tuple(devices)


def _assert_same_value(got, want):
    """Equal, leaf by leaf of the same types, and each table object one instance: equal
    shardings are one object, and so are their meshes."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got, is_leaf=_is_impl)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want, is_leaf=_is_impl)
    assert got_tree == want_tree
    assert [type(g) for g in got_leaves] == [type(w) for w in want_leaves]
    assert got_leaves == want_leaves
    shared = {}
    for leaf in got_leaves:
        sharding = getattr(leaf, "sharding", None)
        for obj in (leaf, getattr(leaf, "mesh", None), sharding, getattr(sharding, "mesh", None)):
            if isinstance(obj, Mesh | NamedSharding | SingleDeviceSharding):
                assert shared.setdefault((type(obj), obj), obj) is obj


def _is_impl(obj):
    return isinstance(obj, prng.PRNGImpl)


def _serialize(name, devices) -> bytes:
    options = {
        "target_minor_version": TARGET_MINOR_VERSIONS.get(name, 0),
        "writer": vector_cases.WRITERS.get(name),
    }
    if name in SPECS_CASES:
        return serialize_specs(*SPECS_CASES[name](devices), **options)
    if name in VALUE_CASES:
        return serialize_value(VALUE_CASES[name](devices), **options)
    return serialize_program(*PROGRAM_CASES[name](devices), **options)


def _assert_reads_as_its_case(name, data, devices):
    """`data` lifts into objects equal to those the case `name` builds."""
    if name in SPECS_CASES:
        _assert_same_specs(deserialize_specs(data), SPECS_CASES[name](devices))
    elif name in VALUE_CASES:
        got = deserialize_value(data, allowed_modules=ALLOWED)
        _assert_same_value(got, VALUE_CASES[name](devices))
    else:
        prog = deserialize_program(data, allowed_modules=ALLOWED)
        _assert_same_program(prog, PROGRAM_CASES[name](devices))


ALL_CASES = [*SPECS_CASES, *PROGRAM_CASES, *VALUE_CASES]


@pytest.mark.parametrize("name", ALL_CASES)
def test_python_writes_the_committed_bytes(name, devices):
    skip_case(name)
    assert _serialize(name, devices) == _vector(name)


@pytest.mark.parametrize("name", list(SPECS_CASES))
def test_typescript_specs_lift_to_equal_jax_objects(name, devices):
    skip_case(name)
    _assert_same_specs(deserialize_specs(_vector(name)), SPECS_CASES[name](devices))


@pytest.mark.parametrize("name", list(PROGRAM_CASES))
def test_typescript_programs_lift_to_equal_jax_objects(name, devices):
    prog = deserialize_program(_vector(name), allowed_modules=ALLOWED)
    _assert_same_program(prog, PROGRAM_CASES[name](devices))


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_typescript_values_lift_to_equal_jax_objects(name, devices):
    skip_case(name)
    _assert_reads_as_its_case(name, _vector(name), devices)


def test_every_vector_is_a_case():
    names = {p.stem for p in VECTORS.glob("*.bin")}
    assert names == {*ALL_CASES, *FOREIGN_CASES}


def test_a_newer_minor_version_is_read_and_carried_through(devices):
    skip_case("newer_minor_version")
    data = _vector("newer_minor_version")
    treedef, leaves = deserialize_specs(data)
    _assert_same_specs((treedef, leaves), vector_cases.memory_kinds(devices))
    assert serialize_specs(treedef, leaves) == data


GOLDEN = sorted((ROOT / "test" / "golden").glob("v*/*.bin"))


def test_there_are_golden_vectors_of_every_release():
    assert {"v1.0", "v1.1", "v1.2"} <= {p.parent.name for p in GOLDEN}


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_vectors_decode_forever(path, devices):
    """Each decodes, re-encodes to its very bytes, and reads as its committed JSON form."""
    skip_case(path.stem)
    data = path.read_bytes()
    want = json.loads(path.with_suffix(".json").read_text())
    vector_cases.example_program(devices)  # makes the example's train.step importable
    if path.stem in ALL_CASES:  # what its objects need in this process (a PRNG impl, ...)
        (SPECS_CASES | PROGRAM_CASES | VALUE_CASES)[path.stem](devices)
    # Written again for a reader of its own version, as a peer re-sends it; a newer version's
    # payload by default, carrying what this library does not know (as read).
    minor = want["header"].get("minorVersion", 0)
    target = {"target_minor_version": minor} if minor <= SCHEMA_MINOR_VERSION else {}
    kind = want["header"]["kind"]
    if kind == "PAYLOAD_KIND_SPECS":
        message = payload_pb2.SpecsPayload
        again = serialize_specs(*deserialize_specs(data), **target)
    elif kind == "PAYLOAD_KIND_VALUE":
        message = payload_pb2.ValuePayload
        again = serialize_value(deserialize_value(data, allowed_modules=ALLOWED), **target)
    else:
        message = payload_pb2.ProgramPayload
        program = deserialize_program(data, allowed_modules=ALLOWED)
        again = serialize_program(*program, **target)
    assert again == data
    assert json_format.MessageToDict(message.FromString(data)) == _known_fields(want)


def _known_fields(json_form):
    """The JSON form without TypeScript's "@unknown" fields, which protobuf's JSON omits
    (the bytes, compared above, carry them)."""
    if isinstance(json_form, dict):
        return {k: _known_fields(v) for k, v in json_form.items() if k != "@unknown"}
    if isinstance(json_form, list):
        return [_known_fields(v) for v in json_form]
    return json_form


def _typescript_cli() -> list[str]:
    cli = ROOT / "dist" / "src" / "cli" / "main.js"
    if not cli.exists():  # npm test builds it; a lone pytest run builds it here.
        subprocess.run(["npx", "tsc", "-p", "tsconfig.build.json"], cwd=ROOT, check=True)
    return ["node", str(cli)]


def test_python_bytes_through_typescript_and_back(devices, tmp_path):
    written = tmp_path / "python"
    written.mkdir()
    cases = [name for name in ALL_CASES if case_limit(name) is None]  # those JAX builds here
    for name in cases:
        (written / f"{name}.bin").write_bytes(_serialize(name, devices))
    out = tmp_path / "typescript"
    out.mkdir()  # the CLI writes into a folder that exists
    files = [str(written / f"{name}.bin") for name in cases]
    subprocess.run([*_typescript_cli(), "canonicalize", "--out-dir", str(out), *files], check=True)
    for name in cases:
        again = (out / f"{name}.bin").read_bytes()
        assert again == (written / f"{name}.bin").read_bytes(), name
        _assert_reads_as_its_case(name, again, devices)
