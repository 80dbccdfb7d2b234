"""test/vectors/shard_indices.json is what JAX gives now (TypeScript is checked against it)."""

import json

import pytest
import shard_index_cases


@pytest.fixture(scope="module")
def committed():
    return json.loads(shard_index_cases.VECTORS.read_text())


def test_the_committed_vectors_are_what_jax_gives_now(committed, devices):
    fresh = shard_index_cases.vectors(devices)
    assert [c["name"] for c in committed["cases"]] == [c["name"] for c in fresh["cases"]]
    for old, new in zip(committed["cases"], fresh["cases"], strict=True):
        assert old == new, f"{old['name']}: rerun python tests/shard_index_cases.py"


def test_the_file_is_written_as_the_generator_writes_it(committed, devices):
    text = shard_index_cases.VECTORS.read_text()
    assert text == shard_index_cases.dumps(committed)


def test_uneven_shapes_are_refused_as_jax_refuses_them(committed):
    uneven = [c for c in committed["cases"] if c["name"].startswith("uneven_")]
    assert uneven and all(c["error"] == "indivisible" for c in uneven)
