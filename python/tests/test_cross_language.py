"""The TypeScript side's example program, built in Python, gives the same bytes.

`node dist/src/cli/main.js demo` (src/example.ts) encodes a program of 1,000
leaves over a 128x8 mesh with FunctionRef("train", "step"). The same model in
JAX must give byte-identical bytes; their SHA-256 was taken from the
TypeScript output when both sides were first compared.
"""

import hashlib
import sys
import types

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import deserialize_program, serialize_program

TS_DEMO_SHA256 = "79f9960745fb6222d5c60fd91416d0d9a010f4545f7ac46f98da0b8015f958b2"
TS_DEMO_SIZE = 3807


def _train_module():
    train = types.ModuleType("train")

    def step(x):
        return x

    step.__module__, step.__qualname__ = "train", "step"
    train.step = step
    return train


def test_example_program_matches_typescript(devices, monkeypatch):
    train = _train_module()
    monkeypatch.setitem(sys.modules, "train", train)
    mesh = Mesh(np.array(devices[:1024]).reshape(128, 8), ("data", "model"))
    shardings = [
        NamedSharding(mesh, P("data", "model")),
        NamedSharding(mesh, P("model", None)),
        NamedSharding(mesh, P(None, "model")),
        NamedSharding(mesh, P()),
    ]
    names = ["attention", "mlp_in", "mlp_out", "norm"]
    layers = [
        {
            name: jax.ShapeDtypeStruct((1024, 512), np.float32, sharding=shardings[(i + j) % 4])
            for j, name in enumerate(names)
        }
        for i in range(0, 1000, 4)
    ]
    in_leaves, in_treedef = jax.tree_util.tree_flatten({"layers": layers})
    loss = jax.ShapeDtypeStruct((), np.float32, sharding=shardings[3])
    out_leaves, out_treedef = jax.tree_util.tree_flatten({"loss": loss})
    data = serialize_program(
        train.step, in_treedef, in_leaves, out_treedef, out_leaves, devices[:1024]
    )
    assert len(data) == TS_DEMO_SIZE
    assert hashlib.sha256(data).hexdigest() == TS_DEMO_SHA256
    prog = deserialize_program(data, allowed_modules={"train"})
    assert prog.fun is train.step and list(prog.in_leaves) == in_leaves
