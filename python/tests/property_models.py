"""Random models for the property tests: JSON descriptions built into JAX objects.

The description format is test/property-models.ts's: shared objects by kind
(device lists, meshes, shardings, leaves) and a tree, or a program, over the
leaves. `build_specs` and `build_program` make the JAX model a description
stands for, each described object once; `build_value` a value (1.2) over
those objects and a few dtypes, an impl and a function. Run as a script on a file of
descriptions and TypeScript's bytes for them, it checks that Python writes
the same bytes (test/property-cross-language.test.ts runs it).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import sys
from typing import Any

if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=256")

import jax
import numpy as np
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax._src.random import prng
from jax.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import UnloadedFunction, serialize_program, serialize_specs

# Types the descriptions name as "property_models.<Name>", found here when lifted.
Point = collections.namedtuple("Point", ["x", "y"])
Box = collections.namedtuple("Box", ["lo", "hi", "size"])
NAMEDTUPLES = {"Point": Point, "Box": Box}


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Pair:
    """The custom node of the descriptions: two children and one meta field."""

    a: Any
    b: Any
    tag: str = dataclasses.field(metadata={"static": True}, default="tag")


def step(x):
    """A function found by name."""
    return x


def build_objects(desc: dict) -> dict[str, list]:
    """The shared objects of a description, by kind, each built once."""
    devices = {d.id: d for d in jax.devices()}
    lists = [xc.DeviceList(tuple(devices[i] for i in ids)) for ids in desc["lists"]]
    meshes = [
        Mesh(
            np.array(list(lists[m["list"]]), dtype=object).reshape(tuple(m["sizes"])),
            tuple(m["names"]),
            axis_types=tuple(getattr(AxisType, t) for t in m["types"]),
        )
        for m in desc["meshes"]
    ]
    shardings = [_sharding(s, lists, meshes, devices) for s in desc["shardings"]]
    leaves = [
        jax.ShapeDtypeStruct(
            tuple(leaf["shape"]),
            _dtype(leaf["dtype"], leaf.get("keyType")),
            sharding=None if leaf["sharding"] is None else shardings[leaf["sharding"]],
            weak_type=leaf["weakType"],
        )
        for leaf in desc["leaves"]
    ]
    return {"list": lists, "mesh": meshes, "sharding": shardings, "leaf": leaves}


def _dtype(name: str, key_type: dict | None = None):
    if name == "string":
        return np.dtypes.StringDType()
    if name == "float0":
        return jax.dtypes.float0
    if name == "key":  # a key array of a registered impl, by its name
        impl = prng.prngs[key_type["impl"]]
        assert list(impl.key_shape) == key_type["keyShape"], key_type
        return prng.KeyTy(impl)
    return jax.numpy.dtype(name)


def _sharding(s: dict, lists, meshes, devices):
    if "named" in s:
        n = s["named"]
        spec = P(
            *map(_entry, n["entries"]), unreduced=set(n["unreduced"]), reduced=set(n["reduced"])
        )
        return NamedSharding(meshes[n["mesh"]], spec, memory_kind=n["memoryKind"])
    if "single" in s:
        single = s["single"]
        return SingleDeviceSharding(devices[single["device"]], memory_kind=single["memoryKind"])
    g = s["gspmd"]
    op = xc.OpSharding()
    op.type = getattr(xc.OpSharding.Type, g["type"].upper())
    if g["type"] != "replicated":
        op.tile_assignment_dimensions = g["dims"] if g["type"] == "other" else []
        op.tile_assignment_devices = g["devices"]
    op.replicate_on_last_tile_dim = g["replicate"]
    hlo = xc.HloSharding.from_proto(op)
    return sharding_impls.GSPMDSharding(lists[g["list"]], hlo, memory_kind=g["memoryKind"])


def _entry(e):
    if e is None:
        return None
    if "axis" in e:
        return e["axis"]
    if "tuple" in e:
        return tuple(e["tuple"])
    return P.UNCONSTRAINED


def _tree(t: dict, leaves: list) -> Any:
    if "leaf" in t:
        return leaves[t["leaf"]]
    if "none" in t:
        return None
    if "tuple" in t:
        return tuple(_tree(c, leaves) for c in t["tuple"])
    if "list" in t:
        return [_tree(c, leaves) for c in t["list"]]
    if "dict" in t:
        return {k: _tree(v, leaves) for k, v in t["dict"]}
    if "intDict" in t:
        return {k: _tree(v, leaves) for k, v in t["intDict"]}
    if "ordered" in t:
        return collections.OrderedDict((k, _tree(v, leaves)) for k, v in t["ordered"])
    if "defaultDict" in t:
        d = t["defaultDict"]
        factory = list if d["factory"] == "builtins.list" else None
        return collections.defaultdict(factory, {k: _tree(v, leaves) for k, v in d["entries"]})
    if "namedtuple" in t:
        cls = NAMEDTUPLES[t["namedtuple"]["type"]]
        return cls(*(_tree(v, leaves) for v in t["namedtuple"]["values"]))
    c = t["custom"]
    return Pair(_tree(c["a"], leaves), _tree(c["b"], leaves), tag=c["tag"])


def build_specs(desc: dict, tree: dict | None = None, objects=None):
    """(treedef, leaves) of a description's tree."""
    objects = objects or build_objects(desc)
    leaves, treedef = jax.tree_util.tree_flatten(_tree(tree or desc["tree"], objects["leaf"]))
    return treedef, leaves


def value_leaves(objects: dict[str, list]) -> list:
    """What a value's leaves are drawn from: every shared object of a description, and a
    dtype, a key dtype, a PRNG impl and a function by name (the value forms of 1.2)."""
    rbg = prng.prngs["rbg"]
    others = [jax.numpy.dtype("bfloat16"), prng.KeyTy(rbg), rbg, step]
    return [*objects["list"], *objects["mesh"], *objects["sharding"], *objects["leaf"], *others]


def build_value(desc: dict, tree: dict) -> Any:
    """A value: `tree` over value_leaves of the description's objects."""
    return _tree(tree, value_leaves(build_objects(desc)))


def build_program(desc: dict) -> tuple:
    """The arguments of serialize_program for a description with a program."""
    objects = build_objects(desc)
    p = desc["program"]
    fn = p["function"]
    if "byName" in fn:
        module, qualname = fn["byName"]
        fun = getattr(sys.modules[module], qualname)
    else:
        refs = tuple(objects[next(iter(r))][next(iter(r.values()))] for r in fn["pickled"]["refs"])
        fun = UnloadedFunction("pickled in TypeScript", bytes(fn["pickled"]["pickle"]), refs)
    in_treedef, in_leaves = build_specs(desc, desc["tree"], objects)
    out_treedef = out_leaves = None
    if p["outputs"] is not None:
        out_treedef, out_leaves = build_specs(desc, p["outputs"], objects)
    devices = objects["list"][p["devices"]]
    return fun, in_treedef, in_leaves, out_treedef, out_leaves, devices


def serialize(desc: dict) -> bytes:
    """The canonical bytes of a description's model: its program if it has one, else its specs.
    No writer is named (TypeScript names none unless asked; Python would name itself when the
    program's function is pickled)."""
    if desc.get("program"):
        return serialize_program(*build_program(desc), writer=None)
    return serialize_specs(*build_specs(desc))


def check(path: str) -> int:
    """Compares Python's bytes with TypeScript's for each line of `path`; returns mismatches."""
    differ = 0
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        case = json.loads(line)
        ours = serialize(case["model"]).hex()
        if ours != case["bytes"]:
            differ += 1
            if differ <= 3:
                print(f"case {i}: TypeScript {case['bytes']}\n        Python     {ours}")
                print(f"        {json.dumps(case['model'])}")
    print(f"{len(lines) - differ} of {len(lines)} models give the same bytes")
    return differ


if __name__ == "__main__":
    # Run as itself, so its types are named property_models.<Name> as the descriptions say.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import property_models

    sys.exit(1 if property_models.check(sys.argv[1]) else 0)
