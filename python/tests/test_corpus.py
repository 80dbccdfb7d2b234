"""The bad-payload corpus of test/corpus/bad/: every payload fails with its path and code.

TypeScript checks the same files (test/corpus.test.ts), so both languages raise the
same DecodeError for each; test/corpus-cases.ts describes how each was made. A case's
options (`limits`, `maxMinorVersion`) are TypeScript names; Python takes them in
snake_case (maxRank -> max_rank).
"""

import json
import pathlib
import re

import pytest

from colocated_wire import DecodeError, DecodeLimits, deserialize_program, deserialize_specs
from colocated_wire.errors import DECODE_ERROR_CODES

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "bad"
CASES = sorted(p.name.removesuffix(".expect.json") for p in CORPUS.glob("*.expect.json"))
EXPECTATION_KEYS = {"decoder", "path", "code", "limits", "maxMinorVersion", "message"}


def expectation(name):
    return json.loads((CORPUS / f"{name}.expect.json").read_text())


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def options(want) -> dict:
    """deserialize_*'s keyword arguments for a case's options."""
    out = {}
    if "limits" in want:
        out["limits"] = DecodeLimits(**{snake(k): v for k, v in want["limits"].items()})
    if "maxMinorVersion" in want:
        out["max_minor_version"] = want["maxMinorVersion"]
    return out


def test_the_corpus_covers_every_code():
    assert len(CASES) > 100
    # But writer-mismatch, raised only where pickles would load: test_writer.py.
    assert {expectation(name)["code"] for name in CASES} == DECODE_ERROR_CODES - {"writer-mismatch"}


def test_every_case_has_its_bytes_and_only_known_keys():
    assert sorted(p.stem for p in CORPUS.glob("*.bin")) == CASES
    for name in CASES:
        assert set(expectation(name)) <= EXPECTATION_KEYS, name


def test_snake_case_names_are_the_decode_limits_fields():
    assert snake("maxDevicesPerList") == "max_devices_per_list"
    assert snake("maxRank") == "max_rank"


@pytest.mark.parametrize("name", CASES)
def test_bad_payload(name, devices):
    want = expectation(name)
    data = (CORPUS / f"{name}.bin").read_bytes()
    decode = deserialize_program if want["decoder"] == "program" else deserialize_specs
    with pytest.raises(DecodeError) as info:
        decode(data, **options(want))
    assert (info.value.path, info.value.code) == (want["path"], want["code"]), str(info.value)
    assert str(info.value).startswith(f"{want['path']}: ")
    assert re.search(want.get("message", ""), str(info.value)), str(info.value)
