"""test/vectors/make_mesh.json is what this JAX's mesh_utils makes (TypeScript's makeMesh is
checked against it): a change in JAX's device order, or in the cases, shows here."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import make_mesh_vectors

VECTORS = Path(__file__).resolve().parents[2] / "test" / "vectors" / "make_mesh.json"


def test_jax_makes_the_committed_make_mesh_vectors():
    committed = json.loads(VECTORS.read_text())
    assert committed["jax"] == jax.__version__, "regenerate with python/tests/make_mesh_vectors.py"
    made = make_mesh_vectors.cases()
    assert len(made) == len(committed["cases"]) > 90
    for i, (got, want) in enumerate(zip(made, committed["cases"], strict=True)):
        assert got == want, f"case {i}: {want['devices'][0]['kind']} as {want['shape']}"
