"""The bad-payload corpus of test/corpus/bad/: every payload fails with its path and code.

TypeScript checks the same files (test/corpus.test.ts), so both languages raise the
same DecodeError for each; test/corpus-cases.ts describes how each was made.
"""

import json
import pathlib
import time

import jax
import numpy as np
import pytest
from jax import numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import (
    DecodeError,
    EncodeError,
    deserialize_program,
    deserialize_specs,
    serialize_specs,
)
from colocated_wire.errors import DECODE_ERROR_CODES

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "bad"
CASES = sorted(p.name.removesuffix(".expect.json") for p in CORPUS.glob("*.expect.json"))


def expectation(name):
    return json.loads((CORPUS / f"{name}.expect.json").read_text())


def test_the_corpus_covers_every_code():
    assert len(CASES) > 50
    assert {expectation(name)["code"] for name in CASES} == DECODE_ERROR_CODES


@pytest.mark.parametrize("name", CASES)
def test_bad_payload(name, devices):
    want = expectation(name)
    data = (CORPUS / f"{name}.bin").read_bytes()
    decode = deserialize_program if want["decoder"] == "program" else deserialize_specs
    started = time.perf_counter()
    with pytest.raises(DecodeError) as info:
        decode(data)
    assert (info.value.path, info.value.code) == (want["path"], want["code"]), str(info.value)
    assert time.perf_counter() - started < 0.5


def test_what_is_refused_is_not_written(devices):
    # The corpus's mesh of no devices cannot be written from JAX objects either.
    mesh = Mesh(np.empty((0, 4), dtype=object), ("x", "y"))
    leaf = jax.ShapeDtypeStruct((4,), jnp.float32, sharding=NamedSharding(mesh, P()))
    with pytest.raises(EncodeError, match="no devices"):
        serialize_specs(jax.tree_util.tree_structure([0]), [leaf])
