"""The mutation fuzzer (fuzzing.py): every mutated payload decodes or raises DecodeError.

`npm test` runs a few thousand cases, `npm run fuzz` 100,000 (FUZZ_CASES).
Both languages mutate the same seeds the same way; when TypeScript's
outcomes for the same cases are in out/fuzz/ (test/fuzz.test.ts writes
them), each case must have the same outcome in both.
"""

import os

import fuzzing

CASES = int(os.environ.get("FUZZ_CASES", "3000"))
OUT = fuzzing.ROOT / "out" / "fuzz"


def test_mutated_payloads_decode_or_raise_decode_error(devices):
    report = fuzzing.fuzz(CASES)
    print(f"\n{report.summary()}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"python-{CASES}.txt").write_text("\n".join(report.outcomes) + "\n")
    assert report.failures()[:5] == []
    assert report.slowest_s < 2
    assert report.count("decoded") > CASES / 100
    assert len(report.by_code()) > 8


def test_typescript_gives_each_case_the_same_outcome(devices):
    theirs = OUT / f"typescript-{CASES}.txt"
    ours = OUT / f"python-{CASES}.txt"
    if not theirs.exists() or not ours.exists():
        return  # jest has not run these cases here
    pairs = zip(ours.read_text().splitlines(), theirs.read_text().splitlines(), strict=True)
    # A LiftError is this worker's environment, which TypeScript does not have.
    differ = [
        (i, py, ts)
        for i, (py, ts) in enumerate(pairs)
        if py != ts and not py.startswith("lift-error")
    ]
    print(f"\n{CASES - len(differ)} of {CASES} cases agree")
    assert differ[:5] == []
