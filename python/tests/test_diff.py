"""colocated_wire.diff: why two payloads differ, by cause and tree path.

Payloads are written from real JAX objects (serialize_specs, serialize_program,
serialize_value); each kind of difference the CLI names is named here with its
path, and the built TypeScript CLI (`colocated-wire diff --json`) must give the
same result, field for field, on the same pairs of files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import colocated_wire
from colocated_wire import Writer, serialize_program, serialize_specs, serialize_value
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.diff import DiffInputError, PayloadDiff, diff

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "dist" / "src" / "cli" / "main.js"


def _flat(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, leaves


def _specs(tree) -> bytes:
    return serialize_specs(*_flat(tree))


def _lines(a: bytes, b: bytes) -> list[str]:
    return str(diff(a, b)).split("\n")[1:]


def _f32(shape, sharding=None, weak_type=False):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding, weak_type=weak_type)


@pytest.fixture(scope="module")
def meshes(devices):
    """A 2x4 mesh, the same with devices 3 and 5 swapped, and 16x64 against 64x16 transposed."""
    ids = np.arange(8)
    swapped = ids.copy()
    swapped[[3, 5]] = [5, 3]
    grid = np.array(devices[:1024])
    return {
        "mesh": Mesh(grid[ids].reshape(2, 4), ("x", "y")),
        "swapped": Mesh(grid[swapped].reshape(2, 4), ("x", "y")),
        "wide": Mesh(grid.reshape(16, 64), ("x", "y")),
        "transposed": Mesh(grid.reshape(16, 64).T, ("x", "y")),
    }


def _layers(mesh, spec, extra=False):
    """1,000 layers, each a weight on `spec` and a bias, and an embedding off the mesh."""
    layer = {
        "w": _f32((8, 4), NamedSharding(mesh, spec)),
        "b": _f32((8,), NamedSharding(mesh, PartitionSpec())),
    }
    if extra:
        layer["bias"] = _f32((1,))
    return {"layers": [dict(layer) for _ in range(1000)], "embed": _f32((4, 4))}


def test_the_same_payload_is_the_same(meshes):
    a = _specs(_layers(meshes["mesh"], PartitionSpec("x", "y")))
    result = diff(a, a)
    assert (result.same, result.equal, result.groups, result.differing_leaves) == (
        True,
        True,
        (),
        0,
    )
    assert str(result) == f"a and b are the same ({len(a):,} bytes)"


def test_a_thousand_leaves_on_one_changed_sharding_are_one_line(meshes):
    mesh = meshes["mesh"]
    a = _specs(_layers(mesh, PartitionSpec("x", "y")))
    b = _specs(_layers(mesh, PartitionSpec("y", "x")))
    result = diff(a, b)
    lines = str(result).split("\n")
    assert lines[0] == "a and b differ: 1,000 leaves in 1 group"
    assert len(lines) == 2
    assert lines[1].startswith('  1,000 leaves under ["layers"][*]["w"]: sharding #')
    assert lines[1].endswith(", PartitionSpec('x', 'y') to ('y', 'x')")
    (group,) = result.groups
    assert (group.cause, group.count, group.leaves) == ("sharding", 1000, 1000)
    assert [p.to_json() for p in group.paths] == [
        {"part": "specs", "path": '["layers"][*]["w"]', "count": 1000}
    ]


def test_the_tree_keys_node_types_none_and_lengths():
    leaf = _f32((2,))
    a = _specs({"a": (leaf, leaf), "b": None, "c": [leaf], "d": leaf, "gone": leaf})
    b = _specs({"a": [leaf, leaf], "b": leaf, "c": [leaf, leaf], "d": leaf, "new": [leaf, leaf]})
    assert _lines(a, b) == [
        '  1 node at (root): key "gone" removed, key "new" added (3 leaves)',
        '  1 node at ["a"]: tuple to list',
        '  1 node at ["b"]: None to leaf (1 leaf)',
        '  1 node at ["c"]: length 1 to 2 (1 leaf)',
    ]


def test_bytes_that_differ_with_contents_equal_say_so(meshes):
    a = _specs([_f32((8,), NamedSharding(meshes["mesh"], PartitionSpec("x")))])
    message = payload_pb2.SpecsPayload.FromString(a)
    (entry,) = [e for e in message.table.entries if e.HasField("device_list")]
    entry.device_list.plain.ids.extend(range(8))  # its iota written out: not canonical
    b = message.SerializeToString()
    result = diff(a, b)
    assert (result.same, result.equal, result.groups) == (False, True, ())
    assert str(result) == "a and b: bytes differ, contents equal"


def test_the_leaves_shape_dtype_weak_type():
    a = _specs({"s": _f32((2, 3)), "d": _f32((4,)), "w": _f32((1,))})
    b = _specs(
        {
            "s": _f32((3, 2)),
            "d": jax.ShapeDtypeStruct((4,), jnp.bfloat16),
            "w": _f32((1,), weak_type=True),
        }
    )
    assert _lines(a, b) == [
        '  1 leaf at ["d"]: dtype float32 to bfloat16',
        '  1 leaf at ["s"]: shape (2, 3) to (3, 2)',
        '  1 leaf at ["w"]: weak_type False to True',
    ]


def test_device_orders_swapped_and_transposed(meshes):
    def on(mesh):
        return _specs([_f32((16,), NamedSharding(mesh, PartitionSpec("x"))) for _ in range(2)])

    swapped = diff(on(meshes["mesh"]), on(meshes["swapped"]))
    (group,) = swapped.groups
    assert group.text.endswith(", devices 3 and 5 swapped")
    assert group.details[0].change == {"kind": "swapped", "devices": [3, 5], "positions": [3, 5]}
    assert str(swapped).endswith("2 leaves under (root): " + group.text)
    transposed = diff(on(meshes["wide"]), on(meshes["transposed"]))
    assert transposed.groups[0].text.endswith(
        "axis sizes (16, 64) to (64, 16), device order iota [16, 64] to [64, 16] transposed"
    )


def test_live_pairs_give_what_their_bytes_give(meshes):
    def pair(spec):
        leaves, treedef = jax.tree_util.tree_flatten(_layers(meshes["mesh"], spec))
        return treedef, leaves

    live = diff(pair(PartitionSpec("x", "y")), pair(PartitionSpec("y", "x")))
    data = diff(
        _specs(_layers(meshes["mesh"], PartitionSpec("x", "y"))),
        _specs(_layers(meshes["mesh"], PartitionSpec("y", "x"))),
    )
    assert isinstance(live, PayloadDiff)
    assert live.to_json() == data.to_json()


def test_a_payload_it_cannot_read_or_of_another_kind_is_named(meshes):
    a = _specs([_f32((2,))])
    with pytest.raises(DiffInputError, match=r"^b: payload: ") as bad:
        diff(a, b"\xff")
    assert bad.value.input == "b"
    program = serialize_program(_program_fn, *_empty_inputs(), None, None, jax.devices()[:1])
    with pytest.raises(DiffInputError) as kinds:
        diff(a, program)
    assert str(kinds.value) == "b: header.kind: this is a program payload, not a specs payload"
    assert kinds.value.error.code == "wrong-payload-kind"


def test_the_package_exports_diff():
    assert callable(colocated_wire.diff)
    assert "diff" in colocated_wire.__all__


def _program_fn(x):
    return x


def _empty_inputs():
    leaves, treedef = jax.tree_util.tree_flatten(((), {}))
    return treedef, leaves


def _program(fn, devices, outputs=False):
    x = _f32((4,))
    leaves, treedef = jax.tree_util.tree_flatten(((x,), {}))
    out_leaves, out_treedef = jax.tree_util.tree_flatten([x]) if outputs else (None, None)
    return serialize_program(fn, treedef, leaves, out_treedef, out_leaves, devices)


def _cli_json(tmp_path: Path, name: str, a: bytes, b: bytes) -> dict:
    # `npm test` builds dist/ first; a missing build is a failure, not a reason to skip.
    assert CLI.exists(), f"{CLI} is missing: run `npm run build` first (npm test does)"
    (tmp_path / f"{name}.a.bin").write_bytes(a)
    (tmp_path / f"{name}.b.bin").write_bytes(b)
    run = subprocess.run(
        [
            "node",
            str(CLI),
            "diff",
            "--json",
            str(tmp_path / f"{name}.a.bin"),
            str(tmp_path / f"{name}.b.bin"),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == (0 if a == b else 1), run.stderr
    return json.loads(run.stdout)


def test_the_typescript_cli_gives_the_same_result(meshes, devices, tmp_path):
    mesh, swapped = meshes["mesh"], meshes["swapped"]
    leaf = _f32((2,))
    pairs = {
        "same": (_specs(_layers(mesh, PartitionSpec("x"))),) * 2,
        "sharding": (
            _specs(_layers(mesh, PartitionSpec("x", "y"))),
            _specs(_layers(swapped, PartitionSpec("y", "x"), extra=True)),
        ),
        "tree": (
            _specs({"a": (leaf, leaf), "b": None, "c": [leaf], "gone": leaf}),
            _specs({"a": [leaf, leaf], "b": leaf, "c": [leaf, leaf], "new": leaf}),
        ),
        "leaves": (
            _specs({"s": _f32((2, 3)), "w": _f32((1,), NamedSharding(mesh, PartitionSpec()))}),
            _specs(
                {
                    "s": jax.ShapeDtypeStruct((3, 2), jnp.bfloat16),
                    "w": _f32((1,), NamedSharding(meshes["wide"], PartitionSpec()), weak_type=True),
                }
            ),
        ),
        "program": (
            _program(_program_fn, devices[:8]),
            _program(_empty_inputs, [devices[1], devices[0], *devices[2:8]], outputs=True),
        ),
        "value": (
            serialize_value(
                (mesh, jnp.dtype("float32"), [NamedSharding(mesh, PartitionSpec("x"))])
            ),
            serialize_value((swapped, jnp.dtype("bfloat16"), [jnp.dtype("int8")])),
        ),
    }
    older = Writer("colocated-wire", "0.1.0", "python", "3.11", "0.9.2")
    pairs["writer"] = (
        serialize_specs(*_flat([leaf]), writer=older),
        serialize_specs(*_flat([leaf]), writer=Writer("colocated-wire", "0.2.0", "typescript")),
    )
    pairs["writer added"] = (_specs([leaf]), serialize_specs(*_flat([leaf]), writer=older))
    for name, (a, b) in pairs.items():
        ours = diff(a, b)
        assert _cli_json(tmp_path, name, a, b) == json.loads(json.dumps(ours.to_json())), name
        assert ours.same == (name == "same")
