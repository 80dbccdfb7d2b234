"""The TypeScript command line reads what colocated_wire.plugin writes in a real colocated call.

A colocated function capturing a mesh and shardings is called once with the
plugin installed. Its first call writes three programs, the first a pickled
closure whose Mesh, DeviceList and shardings sit in the table, and a worker
sends its output specs back in JAX's carrier: a 0-d StringDType array holding
base64 text. Both are taken where the controller meets them (`func._serialize`
returns the program, `func._deserialize_specs` receives the carrier), passing
everything through unchanged, then handed to `node dist/src/cli/main.js`:
decode must give the proto3 JSON mapping protobuf's own Python gives, inspect
must list the table the payload holds, and canonicalize must give the bytes
(for the carrier, the text) back unchanged.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import cloudpickle
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from google.protobuf import json_format
from jax.experimental import colocated_python as cp
from jax.experimental.colocated_python import func
from jax.sharding import NamedSharding, PartitionSpec
from local_node import local_node_class

from colocated_wire import __version__, deserialize_program, deserialize_specs, plugin
from colocated_wire._gen.colocated.v1 import payload_pb2

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "dist" / "src" / "cli" / "main.js"


def _cli(*args: str) -> str:
    # `npm test` builds dist/ first; a missing build is a failure, not a reason to skip.
    assert CLI.exists(), f"{CLI} is missing: run `npm run build` first (npm test does)"
    run = subprocess.run(["node", str(CLI), *args], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def written(devices, tmp_path_factory):
    """The first call's function payload and output-spec carrier text, and what they refer to."""
    mesh = jax.sharding.Mesh(np.array(devices[:8]).reshape(2, 4), ("a", "b"))
    rows = NamedSharding(mesh, PartitionSpec("a"))
    cols = NamedSharding(mesh, PartitionSpec(None, "b"))
    single = jax.sharding.SingleDeviceSharding(devices[9])
    x = jax.device_put(jnp.arange(32.0).reshape(4, 8), rows)

    def reshard(a):
        assert a.sharding.mesh == mesh
        return {"cols": jax.device_put(a * 2, cols), "row": jax.device_put(a[0], single)}

    programs, texts = [], []
    with plugin.installed(allow_pickle=True):
        serialize, deserialize_specs_ = func._serialize, func._deserialize_specs

        def spy_serialize(obj):
            data = serialize(obj)
            programs.append(data)
            return data

        def spy_deserialize_specs(carrier):
            texts.append(carrier.addressable_shards[0].data.item())
            return deserialize_specs_(carrier)

        func._serialize, func._deserialize_specs = spy_serialize, spy_deserialize_specs
        try:
            out = cp.colocated_python(reshard)(x)
        finally:
            func._serialize, func._deserialize_specs = serialize, deserialize_specs_
    assert out["cols"].sharding == cols and out["row"].sharding == single
    # output specs and push, the call, pop; one carrier of output specs
    assert (len(programs), len(texts)) == (3, 1)
    shared = deserialize_program(programs[0]).fun.shared
    assert all(obj in shared for obj in (mesh, cols, single))
    treedef, leaves = deserialize_specs(base64.b64decode(texts[0]))
    assert treedef == jax.tree.structure(out)
    assert [leaf.sharding for leaf in leaves] == [cols, single]
    directory = tmp_path_factory.mktemp("plugin-payloads")
    (directory / "function.bin").write_bytes(programs[0])
    (directory / "carrier.txt").write_text(texts[0], encoding="ascii")
    return directory, programs[0], texts[0]


def _message(path: Path):
    data = path.read_bytes()
    if path.suffix == ".txt":
        return payload_pb2.SpecsPayload.FromString(base64.b64decode(data))
    return payload_pb2.ProgramPayload.FromString(data)


@pytest.mark.parametrize("name", ["function.bin", "carrier.txt"])
def test_decode_gives_the_proto3_json_protobuf_gives(written, name):
    directory = written[0]
    base64_flag = ["--base64"] if name.endswith(".txt") else []
    got = json.loads(_cli("decode", *base64_flag, str(directory / name)))
    assert got == json_format.MessageToDict(_message(directory / name))
    if name == "function.bin":
        assert got["function"]["pickled"]["refs"]  # the closure's objects, by table index


@pytest.mark.parametrize("name", ["function.bin", "carrier.txt"])
def test_inspect_lists_the_table_the_payload_holds(written, name):
    directory = written[0]
    base64_flag = ["--base64"] if name.endswith(".txt") else []
    out = _cli("inspect", *base64_flag, str(directory / name)).splitlines()
    message = _message(directory / name)
    entries = message.table.entries
    kind = "program" if name == "function.bin" else "specs"
    size = len(message.SerializeToString())
    assert out[0].startswith(f"{kind} payload: {size} bytes, table ")
    assert out[0].endswith(f" in {len(entries)} entries")
    if name == "function.bin":  # a pickle, so the writer is named (1.3)
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        assert out[1].startswith(f"written by colocated-wire {__version__} (python {python}, jax ")
        assert out[1].endswith(f", cloudpickle {cloudpickle.__version__})")
    header = next(i for i, line in enumerate(out) if line.split()[:1] == ["index"])
    rows = out[header + 1 : header + 1 + len(entries)]
    for index, (row, entry) in enumerate(zip(rows, entries, strict=True)):
        cells = row.split()
        kind_name = entry.WhichOneof("kind")
        assert cells[:3] == [str(index), _camel(kind_name), str(len(entry.SerializeToString()))]
    kinds = {entry.WhichOneof("kind") for entry in entries}
    if name == "function.bin":
        assert {"device_list", "mesh", "named_sharding", "single_device_sharding"} <= kinds
        for i, ref in enumerate(message.function.pickled.refs):
            assert f"function.pickled.refs[{i}]" in rows[ref]
    else:
        assert {"named_sharding", "single_device_sharding", "array_spec"} <= kinds


def test_canonicalize_gives_the_same_bytes_and_text(written, tmp_path):
    directory, program, text = written
    _cli("canonicalize", "-d", str(tmp_path), str(directory / "function.bin"))
    _cli("canonicalize", "--base64", "-d", str(tmp_path), str(directory / "carrier.txt"))
    assert (tmp_path / "function.bin").read_bytes() == program
    assert (tmp_path / "carrier.txt").read_text(encoding="ascii") == text


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def test_trees_holding_pickles_and_1_1_keys_come_back_byte_for_byte(tmp_path):
    """What the plugin writes for the pytrees of test_plugin_pytrees.py (float keys a
    TypeScript Map cannot make, -0.0, tuples, pickled keys, aux data and a factory) TypeScript
    reads and writes again unchanged, never running a pickle; a local node class too."""
    import collections
    import enum

    from colocated_wire import serialize_specs

    class Level(enum.IntEnum):
        LOW = 1

    s = jax.ShapeDtypeStruct((2,), jnp.float32)
    tree = {
        "floats": {-0.0: s, 2.0: s, 1e16: s, 1e-05: s},
        "tuples": {(1, (b"\x00'", None)): s, (2.0, ()): s},
        "pickled": {Level.LOW: s, 2**70: s},
        "custom": jax.tree_util.Partial(base64.b64encode, s),
        "factory": collections.defaultdict(lambda: 0, {"k": s}),
        "local_class": local_node_class()(s),
    }
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves, allow_pickle=True)
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "in" / "trees.bin").write_bytes(data)
    _cli("canonicalize", "-d", str(tmp_path / "out"), str(tmp_path / "in" / "trees.bin"))
    assert (tmp_path / "out" / "trees.bin").read_bytes() == data
    back, back_leaves = deserialize_specs(data, allow_pickle=True)
    again = jax.tree_util.tree_unflatten(back, back_leaves)
    for name in ("floats", "tuples", "pickled"):
        assert [(k, type(k)) for k in again[name]] == [(k, type(k)) for k in sorted(tree[name])]
    assert again["factory"]["missing"] == 0 and again["custom"].func is base64.b64encode
    assert type(again["local_class"]) is type(tree["local_class"])
