"""The mutation fuzzer (fuzzing.py): every mutated payload decodes or raises DecodeError.

`npm test` runs a few thousand cases, `npm run fuzz` 100,000 (FUZZ_CASES).
Both languages mutate the same seeds the same way; TypeScript's outcomes
for the same cases are in out/fuzz/ (test/fuzz.test.ts writes them, and
`npm test` runs jest first), and each case must have the same outcome in both.
Timings are figures of the report, not assertions.
"""

import os

import fuzzing
import pytest

CASES = int(os.environ.get("FUZZ_CASES", "3000"))
OUT = fuzzing.ROOT / "out" / "fuzz"


@pytest.fixture(scope="module")
def report(devices):
    report = fuzzing.fuzz(CASES)
    print(f"\n{report.summary()}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"python-{CASES}.txt").write_text("\n".join(report.outcomes) + "\n")
    return report


def test_mutated_payloads_decode_or_raise_decode_error(report):
    assert report.failures()[:5] == []
    assert report.count("decoded") > CASES / 100
    assert len(report.by_code()) > 8


def test_typescript_gives_each_case_the_same_outcome(report):
    theirs = OUT / f"typescript-{CASES}.txt"
    if not theirs.exists():
        pytest.skip(f"no {theirs.name}: run `FUZZ_CASES={CASES} npx jest test/fuzz.test.ts` first")
    pairs = zip(report.outcomes, theirs.read_text().splitlines(), strict=True)
    # A LiftError is this worker's environment, which TypeScript does not have.
    differ = [
        (i, py, ts)
        for i, (py, ts) in enumerate(pairs)
        if py != ts and not py.startswith("lift-error")
    ]
    print(f"\n{CASES - len(differ)} of {CASES} cases agree")
    assert differ[:5] == []
