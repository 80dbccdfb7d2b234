"""One format across JAX versions: payloads written under one JAX, read under another.

Run with the python of one JAX version's venv (scripts/jax-versions.sh runs it under every
supported version, after the tests; --matrix-only without them):

    python tests/cross_version.py write DIR   # DIR/<jax version>/: one file per case
    python tests/cross_version.py read DIR    # every version's files under DIR, this one's too
    python tests/cross_version.py matrix DIR [--markdown FILE]   # no JAX needed

Every case is a plain description (CASES: shapes, dtype names, device ids, axis
names), so each JAX version builds the same objects from it. `write` writes each
case's colocated_wire payload (<case>.bin: a SpecsPayload, the bytes plugin.codec
puts in the output-spec carrier, a ProgramPayload of a function by name, or a
ValuePayload of a mesh, shardings, dtypes or the function-and-specialization tuple)
and JAX's own pickle of the same objects (jax-pickle/<case>.pkl: colocated_python's
`_serialize` of (treedef, leaves), of the program's 6-tuple, or of the value), so
both sides carry the same cases. `read` lifts every file with this JAX, compares
the result with the objects this JAX builds from the same description, re-encodes
it and compares the bytes (with the file's, and with what this JAX writes for the
case), and tries JAX's `_deserialize` on every pickle; it prints a JSON summary,
keeps it in DIR/results/<jax version>.json, and exits non-zero if any colocated_wire
case fails (JAX's own pickles failing to cross versions is expected, only reported).
`matrix` joins the results into the two writer-by-reader matrices.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from pathlib import Path
from typing import Any

# The namedtuple of the tree cases, found by module and name when read back.
Point = collections.namedtuple("Point", ["x", "y"])
Point.__module__ = "cross_version"
if __name__ == "__main__":  # run as a script: the same module under the name Point names
    sys.modules.setdefault("cross_version", sys.modules[__name__])

DEVICE_COUNT = 16  # the devices the cases name (ids 0..15)
ALLOWED_MODULES = frozenset({"colocated_wire.examples"})
OK = "ok: equal, same bytes"

# --- The cases, as plain data -------------------------------------------------------------

# No explicit memory kinds: CPU's default kind is unpinned_host before JAX 0.7 and device from
# 0.7 on, so NamedSharding(..., memory_kind="unpinned_host") is the default sharding on one
# version and not on the other; they are not the same object to compare.

# Meshes by name: shape, axis names, device ids in mesh order, axis types.
_TRANSPOSED = [
    [[int(a * 1 + b * 8 + c * 4) for c in range(2)] for b in range(2)] for a in range(4)
]  # np.arange(16).reshape(2, 2, 4).transpose(2, 0, 1)
MESHES: dict[str, dict[str, Any]] = {
    "2x4": {"axes": ["x", "y"], "ids": [[0, 1, 2, 3], [4, 5, 6, 7]], "types": None},
    "3d": {"axes": ["a", "b", "c"], "ids": _TRANSPOSED, "types": ["explicit", "auto", "auto"]},
}


def _leaf(shape, dtype="float32", sharding=None, weak_type=False):
    return {"leaf": {"shape": list(shape), "dtype": dtype, "sharding": sharding, "weak": weak_type}}


def _named(mesh, *spec, memory_kind=None):
    return {"named": {"mesh": mesh, "spec": [list(e) if isinstance(e, tuple) else e for e in spec],
                      "memory_kind": memory_kind}}  # fmt: skip


def _gspmd(ids, kind, dims=(), assignment=(), replicate_last=False):
    g = {"ids": list(ids), "type": kind, "dims": list(dims), "assignment": list(assignment)}
    return {"gspmd": {**g, "replicate_last": replicate_last}}


def _tree(kind, *children, **items):
    return {kind: dict(items) if kind == "dict" else list(children)}


DTYPES = (
    "bool", "int4", "int8", "int32", "int64", "uint8", "uint32", "float16",
    "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2", "complex64",
)  # fmt: skip
SPECS_CASES: dict[str, Any] = {
    "named_2d": _tree(
        "list",
        _leaf((8, 4), sharding=_named("2x4", "x", "y")),
        _leaf((8, 4), sharding=_named("2x4", None, "y")),
        _leaf((8,), sharding=_named("2x4", ("x", "y"))),
        _leaf((8, 4), sharding=_named("2x4", ("y", "x"), None)),
        _leaf((2, 2), sharding=_named("2x4")),
        _leaf((2, 2), sharding=_named("2x4", None)),
    ),
    "named_3d": _tree(
        "list",
        _leaf((8, 4, 2), sharding=_named("3d", "a", "b", "c")),
        _leaf((8,), sharding=_named("3d", ("b", "c"))),
        _leaf((4, 4), "bfloat16", sharding=_named("3d", None, "a")),
    ),
    "dtypes": _tree("list", *(_leaf((2, 3), name) for name in DTYPES)),
    "weak_types": _tree(
        "tuple",
        _leaf((), "float32", weak_type=True),
        _leaf((3,), "int32", weak_type=True),
        _leaf((3,), "int32"),
        _leaf((4,), "bfloat16", sharding=_named("2x4", "y"), weak_type=True),
    ),
    "single_device": _tree(
        "list",
        _leaf((4,), "bfloat16", sharding={"single": 0}),
        _leaf((4,), "float8_e4m3fn", sharding={"single": 5}),
        _leaf((4,), "bfloat16", sharding={"single": 0}),
    ),
    "gspmd": _tree(
        "list",
        _leaf((8,), sharding=_gspmd(range(8, 16), "maximal", assignment=[3])),
        _leaf(
            (8, 8),
            sharding=_gspmd(range(8, 16), "other", (2, 2, 2), (0, 2, 4, 6, 1, 3, 5, 7), True),
        ),
        _leaf((8, 8), sharding=_gspmd(range(8, 16), "other", (4, 2), (3, 1, 0, 2, 7, 5, 6, 4))),
        _leaf((8,), sharding=_gspmd(range(8, 16), "replicated")),
    ),
    "trees": _tree(
        "dict",
        a=None,
        b=_tree("tuple", _leaf((1,)), _tree("list", _leaf((2,)), None)),
        c=_tree("point", _leaf((3,), sharding=_named("2x4", "x")), _tree("tuple", _leaf((4,)))),
        d=_tree("dict", nested=_tree("list", _leaf((5,), "bfloat16"))),
        e=_tree("tuple"),
        f=_tree("list"),
        g=_tree("dict"),
    ),
    # colocated.v1.3: a flat dict of dotted keys whose layers and moments repeat: a key trie.
    "flat_dotted": _tree(
        "dict",
        **{
            f"{moment}.layers.{i}.{part}": _leaf(shape, sharding=_named("2x4", *spec))
            for moment in ("opt.mu", "opt.nu", "params")
            for i in range(4)
            for part, shape, spec in (("attn.w", (8, 4), ("x", "y")), ("mlp.w", (8,), ("y",)))
        },
    ),
    # colocated.v1.3: a list of 64 leaves cycling 4 shardings: 4 leaves written and a copy.
    "cyclic_leaves": _tree(
        "list",
        *(
            _leaf((8, 4), sharding=_named("2x4", *spec))
            for _ in range(16)
            for spec in (("x", "y"), ("y", "x"), (None, "y"), (("x", "y"),))
        ),
    ),
}
# Output specs a worker sends back: the bytes plugin.codec puts in (and reads from) JAX's carrier.
CARRIER_CASES: dict[str, Any] = {
    "carrier_out_specs": _tree(
        "dict",
        out=_leaf((8, 4), sharding=_named("2x4", "x", "y")),
        aux=_tree("list", _leaf((), "float32", sharding=_named("2x4"), weak_type=True)),
    ),
}
# Values JAX's colocated Python also serializes (colocated.v1.2's ValuePayload): a mesh, the
# shardings of a call, dtypes and PRNG impls, and the function-and-specialization tuple it
# writes before the output specs are known. Each table object is written once.
KEY = "key<threefry2x32>"  # a key dtype, by its PRNG impl's registered name
VALUE_CASES: dict[str, Any] = {
    "value_mesh": {"mesh": "3d"},
    "value_shardings": _tree(
        "list",
        _named("2x4", "x", "y"),
        _named("2x4", None, "y"),
        _named("2x4", "x", "y"),  # equal to the first, a distinct object: one entry
        {"single": 5},
    ),
    "value_dtypes": _tree(
        "tuple",
        {"dtype": "float32"},
        {"dtype": "bfloat16"},
        {"dtype": "int4"},
        {"dtype": KEY},
        {"dtype": "key<rbg>"},
        {"prng_impl": "threefry2x32"},
        _leaf((4,), KEY, sharding=_named("2x4", "x")),
        _tree("dict", devices={"device_list": [3, 1]}, none=None),
    ),
    "value_function": _tree(
        "tuple", {"function": "colocated_wire.examples.affine"}, None, None, None, None, None
    ),
}
# A program whose function travels by name: colocated_wire.examples.affine(x, scale, shift).
PROGRAM_CASES: dict[str, Any] = {
    "program_affine": {
        "function": "colocated_wire.examples.affine",
        "in": _tree(
            "tuple",
            _tree(
                "tuple",
                _leaf((8, 4), sharding=_named("2x4", "x", "y")),
                _leaf((), sharding=_named("2x4")),
                _leaf((), sharding=_named("2x4")),
            ),
            _tree("dict"),
        ),
        "out": _leaf((8, 4), sharding=_named("2x4", "x", "y")),
        "devices": list(range(8)),
    },
}
# colocated.v1.3: the same program, its header naming a fixed writer (one every version writes
# alike), which a reader keeps when it writes the program again.
PROGRAM_CASES["program_affine_writer"] = {
    **PROGRAM_CASES["program_affine"],
    "writer": {"library": "colocated-wire", "version": "0.1.0", "language": "python"},
}
CASES = {**SPECS_CASES, **CARRIER_CASES, **PROGRAM_CASES, **VALUE_CASES}

# --- Building JAX objects from the descriptions --------------------------------------------


def _devices():
    import jax

    devices = jax.devices()
    if len(devices) < DEVICE_COUNT:
        raise SystemExit(f"cross_version needs {DEVICE_COUNT} devices, has {len(devices)}")
    return devices


def _mesh(name):
    import numpy as np
    from jax.sharding import Mesh

    # JAX 0.4.38 has no jax.sharding.AxisType (Explicit is its AxisTypes.User, kept in a dict).
    from colocated_wire.jax_compat.axis_types import AXIS_TYPE_NAMED, make_mesh

    m = MESHES[name]
    devices = np.array(_devices(), dtype=object)[np.array(m["ids"])]
    if m["types"] is None:
        return Mesh(devices, tuple(m["axes"]))
    types = tuple(AXIS_TYPE_NAMED[t.capitalize()] for t in m["types"])
    return make_mesh(devices, tuple(m["axes"]), types)


def _sharding(d):
    from jax._src.lib import xla_client as xc
    from jax._src.sharding_impls import GSPMDSharding
    from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

    if d is None:
        return None
    if "single" in d:
        return SingleDeviceSharding(_devices()[d["single"]])
    if "named" in d:
        n = d["named"]
        spec = PartitionSpec(*(tuple(e) if isinstance(e, list) else e for e in n["spec"]))
        return NamedSharding(_mesh(n["mesh"]), spec, memory_kind=n["memory_kind"])
    g = d["gspmd"]
    op = xc.OpSharding()
    op.type = getattr(xc.OpSharding.Type, g["type"].upper())
    op.tile_assignment_dimensions = g["dims"]
    op.tile_assignment_devices = g["assignment"]
    op.replicate_on_last_tile_dim = g["replicate_last"]
    devices = tuple(_devices()[i] for i in g["ids"])
    return GSPMDSharding(devices, xc.HloSharding.from_proto(op))


def _dtype(name):
    """numpy's dtype of a name, or the key dtype of a PRNG impl's ("key<threefry2x32>")."""
    import jax
    from jax._src.random import prng

    if name.startswith("key<"):
        return prng.KeyTy(prng.prngs[name.removeprefix("key<").removesuffix(">")])
    return jax.numpy.dtype(name)


def _function(dotted):
    import importlib

    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def _build_tree(d):
    """The object of a description: a tree of specs, or a value's tree of table objects,
    dtypes, PRNG impls and functions."""
    import jax
    from jax._src.random import prng

    if d is None:
        return None
    (kind, body), *_ = d.items()
    if kind == "leaf":
        return jax.ShapeDtypeStruct(
            tuple(body["shape"]),
            _dtype(body["dtype"]),
            sharding=_sharding(body["sharding"]),
            weak_type=body["weak"],
        )
    if kind in ("named", "single", "gspmd"):
        return _sharding(d)
    leaf = {
        "mesh": _mesh,
        "device_list": _device_list,
        "dtype": _dtype,
        "prng_impl": lambda name: prng.prngs[name],
        "function": _function,
    }.get(kind)
    if leaf is not None:
        return leaf(body)
    if kind == "dict":
        return {k: _build_tree(v) for k, v in body.items()}
    children = [_build_tree(c) for c in body]
    return {"list": list, "tuple": tuple}.get(kind, lambda c: Point(*c))(children)


def build_specs(d):
    """(treedef, leaves) of a tree description."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(_build_tree(d))
    return treedef, leaves


def build_value(d):
    """The value serialize_value takes, of a value description."""
    return _build_tree(d)


def build_program(d):
    """The 6-tuple serialize_program takes, of a program description (its devices a
    DeviceList, as JAX's func.py hands `_serialize` them)."""
    fun = _function(d["function"])
    in_treedef, in_leaves = build_specs(d["in"])
    out_treedef, out_leaves = build_specs(d["out"])
    return fun, in_treedef, in_leaves, out_treedef, out_leaves, _device_list(d["devices"])


def _device_list(ids):
    from jax._src.lib import xla_client as xc

    return xc.DeviceList(tuple(_devices()[i] for i in ids))


# --- Writing and reading one case ---------------------------------------------------------


def encode(name: str) -> bytes:
    """The colocated_wire bytes of case `name`, as this JAX writes them."""
    import colocated_wire
    from colocated_wire.plugin import codec
    from colocated_wire.plugin.carrier import from_carrier

    if name in PROGRAM_CASES:
        d = PROGRAM_CASES[name]
        writer = colocated_wire.Writer(**d["writer"]) if "writer" in d else None
        return colocated_wire.serialize_program(*build_program(d), writer=writer)
    if name in VALUE_CASES:
        return colocated_wire.serialize_value(build_value(VALUE_CASES[name]))
    if name in CARRIER_CASES:
        treedef, leaves = build_specs(CARRIER_CASES[name])
        return from_carrier(codec.serialize_specs(treedef, leaves, _device_list(range(8))))
    return colocated_wire.serialize_specs(*build_specs(SPECS_CASES[name]))


def case_object(name: str) -> Any:
    """What this JAX builds for case `name`: (treedef, leaves), a program's 6-tuple, or a
    value; the object both colocated_wire and JAX's `_serialize` are handed."""
    if name in PROGRAM_CASES:
        return build_program(PROGRAM_CASES[name])
    if name in VALUE_CASES:
        return build_value(VALUE_CASES[name])
    return build_specs({**SPECS_CASES, **CARRIER_CASES}[name])


def _differs(name: str, got: Any) -> str | None:
    """How `got`, read back from any version, differs from what this JAX builds for `name`."""
    want = case_object(name)
    if name in PROGRAM_CASES:
        return (
            ("function differs" if got[0] is not want[0] else None)
            or _same_specs(got[1:3], want[1:3])
            or _same_specs(got[3:5], want[3:5])
            or (None if tuple(got[5]) == tuple(want[5]) else "devices differ")
        )
    if name in VALUE_CASES:
        return _same_value(got, want)
    return _same_specs(got, want)


def _same_value(got, want) -> str | None:
    """None if equal leaf by leaf, of the same types, in the same structure (a PRNG impl is a
    leaf, as serialize_value takes it); else how they differ."""
    import jax
    from jax._src.random import prng

    def flatten(v):
        return jax.tree_util.tree_flatten(v, is_leaf=lambda o: isinstance(o, prng.PRNGImpl))

    (got_leaves, got_tree), (want_leaves, want_tree) = flatten(got), flatten(want)
    if got_tree != want_tree:
        return f"tree differs: {got_tree} != {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        if type(g) is not type(w) or not (g is w or g == w):
            return f"leaf {i} differs: {g!r} != {w!r}"
    return None


def _same_specs(got, want) -> str | None:
    got_treedef, got_leaves = got
    want_treedef, want_leaves = want
    if got_treedef != want_treedef:
        return f"treedef differs: {got_treedef} != {want_treedef}"
    if list(got_leaves) != list(want_leaves):
        diff = next(
            i for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)) if g != w
        )
        return f"leaf {diff} differs: {got_leaves[diff]} != {want_leaves[diff]}"
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:200]


def read_case(name: str, data: bytes) -> str:
    """Lifts `data` (case `name`, from any version), compares, re-encodes: OK or why not."""
    import colocated_wire
    from colocated_wire.plugin import codec
    from colocated_wire.plugin.carrier import to_carrier

    try:
        if name in PROGRAM_CASES:
            got = colocated_wire.deserialize_program(data, allowed_modules=ALLOWED_MODULES)
            writer = colocated_wire.payload_writer(data)  # re-sent as its writer wrote it
            again = colocated_wire.serialize_program(*got, writer=writer)
        elif name in VALUE_CASES:
            got = colocated_wire.deserialize_value(data, allowed_modules=ALLOWED_MODULES)
            again = colocated_wire.serialize_value(got)
        elif name in CARRIER_CASES:
            got = codec.deserialize_specs(to_carrier(data, _device_list(range(8))))
            again = encode_specs_carrier(got)
        else:
            got = colocated_wire.deserialize_specs(data)
            again = colocated_wire.serialize_specs(*got)
        differs = _differs(name, got)
    except Exception as e:  # noqa: BLE001  # any failure is a result to report
        return f"FAILED: {_first_line(e)}"
    if differs:
        return f"FAILED: not equal: {differs}"[:300]
    if again != data:
        return "FAILED: equal, but re-encodes to other bytes"
    if encode(name) != data:
        return "FAILED: equal, but this version writes other bytes"
    return OK


def encode_specs_carrier(specs) -> bytes:
    from colocated_wire.plugin import codec
    from colocated_wire.plugin.carrier import from_carrier

    return from_carrier(codec.serialize_specs(*specs, _device_list(range(8))))


def jax_pickle(name: str) -> bytes:
    """JAX's own colocated_python pickle of a case: `_serialize` of the same object (specs
    as (treedef, leaves), the carrier's specs too, before their carrier)."""
    from jax.experimental.colocated_python import serialization

    return serialization._serialize(case_object(name))


def read_jax_pickle(name: str, data: bytes) -> str:
    from jax.experimental.colocated_python import serialization

    try:
        got = serialization._deserialize(data)
    except Exception as e:  # noqa: BLE001
        return f"FAILED: {_first_line(e)}"
    try:  # what another version pickled may not even compare
        differs = _differs(name, got)
    except Exception as e:  # noqa: BLE001
        return f"FAILED: read, cannot compare: {_first_line(e)}"
    return f"FAILED: read, not equal: {differs}"[:300] if differs else "ok"


# --- The commands ---------------------------------------------------------------------------


def _setup_jax() -> str:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = f"--xla_force_host_platform_device_count={DEVICE_COUNT}"
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    import jax

    return jax.__version__


def write(root: Path) -> dict[str, Any]:
    """Writes every case, and JAX's pickle of each, under root/<jax version>/."""
    version = _setup_jax()
    out = root / version
    (out / "jax-pickle").mkdir(parents=True, exist_ok=True)
    written: dict[str, Any] = {"jax": version, "colocated_wire": [], "jax_pickle": {}}
    for name in CASES:
        (out / f"{name}.bin").write_bytes(encode(name))
        written["colocated_wire"].append(name)
    for name in CASES:
        try:
            (out / "jax-pickle" / f"{name}.pkl").write_bytes(jax_pickle(name))
            written["jax_pickle"][name] = "ok"
        except Exception as e:  # noqa: BLE001  # JAX's pickle may not write a case
            written["jax_pickle"][name] = f"FAILED to write: {_first_line(e)}"
    (out / "written.json").write_text(json.dumps(written, indent=1))
    return written


def _versions(root: Path) -> list[str]:
    def key(v: str):
        return tuple(int(p) for p in v.split(".") if p.isdigit())

    return sorted((p.name for p in root.iterdir() if (p / "written.json").is_file()), key=key)


def _summary(cases: dict[str, str], ok: str) -> str:
    bad = {n: r for n, r in cases.items() if r != ok}
    if not bad:
        return ok
    name, why = next(iter(bad.items()))
    return f"{len(cases) - len(bad)}/{len(cases)} read; {name}: {why.removeprefix('FAILED: ')}"


def read(root: Path) -> dict[str, Any]:
    """Reads every version's files under root with this JAX; the results by writer."""
    version = _setup_jax()
    results: dict[str, Any] = {"reader": version, "colocated_wire": {}, "jax_pickle": {}}
    for writer in _versions(root):
        src = root / writer
        cw = {p.stem: read_case(p.stem, p.read_bytes()) for p in sorted(src.glob("*.bin"))}
        missing = set(CASES) - set(cw)
        cw.update({n: "FAILED: not written" for n in missing})
        written = json.loads((src / "written.json").read_text())["jax_pickle"]
        jp = {
            n: read_jax_pickle(n, (src / "jax-pickle" / f"{n}.pkl").read_bytes())
            if status == "ok"
            else status
            for n, status in written.items()
        }
        results["colocated_wire"][writer] = {"summary": _summary(cw, OK), "cases": cw}
        results["jax_pickle"][writer] = {"summary": _summary(jp, "ok"), "cases": jp}
    (root / "results").mkdir(exist_ok=True)
    (root / "results" / f"{version}.json").write_text(json.dumps(results, indent=1))
    return results


def failures(results: dict[str, Any]) -> list[str]:
    """The colocated_wire cells of one reader's results that are not OK."""
    return [
        f"{w} -> {results['reader']}: {cell['summary']}"
        for w, cell in results["colocated_wire"].items()
        if cell["summary"] != OK
    ]


def matrix(root: Path) -> str:
    """Both writer-by-reader matrices of root/results/, as markdown."""
    readers = [
        json.loads((root / "results" / f"{v}.json").read_text())
        for v in _versions(root)
        if (root / "results" / f"{v}.json").is_file()
    ]
    versions = [r["reader"] for r in readers]
    lines: list[str] = []
    for key, title, ok, short in (
        ("colocated_wire", "colocated_wire", OK, "ok"),
        ("jax_pickle", "JAX's own pickle (`serialization._serialize`)", "ok", "ok"),
    ):
        pairs = [
            (w, r["reader"], r[key].get(w, {}).get("summary", "not read"))
            for r in readers
            for w in versions
        ]
        cross = [p for p in pairs if p[0] != p[1]]
        read_ok = sum(s == ok for _, _, s in cross)
        lines += [
            f"{title}: {read_ok} of {len(cross)} cross-version pairs read"
            + (f" ({ok})" if key == "colocated_wire" else "")
            + ".",
            "",
            "| written by \\ read by | " + " | ".join(versions) + " |",
            "|---|" + "---|" * len(versions),
        ]
        for w in versions:
            cells = []
            for r in readers:
                s = r[key].get(w, {}).get("summary", "not read")
                cells.append(short if s == ok else s.replace("|", "\\|")[:72])
            lines.append(f"| {w} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("write", "read", "matrix"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--markdown", type=Path, help="matrix: also write it to this file")
    args = parser.parse_args(argv)
    if args.command == "write":
        print(json.dumps(write(args.dir)))
        return 0
    if args.command == "read":
        results = read(args.dir)
        print(json.dumps(results, indent=1))
        bad = failures(results)
        for line in bad:
            print(f"cross_version: FAILED {line}", file=sys.stderr)
        return 1 if bad else 0
    text = matrix(args.dir)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
