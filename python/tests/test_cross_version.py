"""cross_version.py on this JAX alone: its cases written, then read back under the same
version (scripts/jax-versions.sh runs the same commands across every supported JAX)."""

import json

import cross_version
import jax

from colocated_wire._gen.colocated.v1 import payload_pb2


def test_write_then_read_back_under_this_jax(devices, tmp_path):
    written = cross_version.write(tmp_path)
    assert written["jax"] == jax.__version__
    assert sorted(written["colocated_wire"]) == sorted(cross_version.CASES)
    assert {p.stem for p in (tmp_path / jax.__version__).glob("*.bin")} == set(cross_version.CASES)

    results = cross_version.read(tmp_path)
    assert results["reader"] == jax.__version__
    cells = results["colocated_wire"][jax.__version__]["cases"]
    assert cells == dict.fromkeys(cross_version.CASES, cross_version.OK)
    assert cross_version.failures(results) == []
    # JAX's own pickle of the same objects is tried too; only reported, as it may not round-trip.
    assert set(results["jax_pickle"][jax.__version__]["cases"]) == set(cross_version.CASES)
    saved = json.loads((tmp_path / "results" / f"{jax.__version__}.json").read_text())
    assert saved == results

    text = cross_version.matrix(tmp_path)
    assert "colocated_wire: 0 of 0 cross-version pairs read" in text
    assert f"| {jax.__version__} | ok |" in text


def test_the_cyclic_leaves_are_written_with_a_leaf_copy(devices):
    specs = payload_pb2.SpecsPayload.FromString(cross_version.encode("cyclic_leaves")).specs
    assert len(specs.leaves) == 4 and list(specs.leaf_copies) == [4, 4, 60]


def test_a_changed_payload_is_a_failure(devices, tmp_path):
    cross_version.write(tmp_path)
    path = tmp_path / jax.__version__ / "named_2d.bin"
    data = cross_version.encode("weak_types")  # bytes of another case: lifts, but not equal
    path.write_bytes(data)
    results = cross_version.read(tmp_path)
    assert results["colocated_wire"][jax.__version__]["cases"]["named_2d"].startswith("FAILED")
    assert len(cross_version.failures(results)) == 1
