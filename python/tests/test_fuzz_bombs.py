"""Bombs (bombs.py) fail with their DecodeError in bounded memory.

They are decoded in a fresh process whose address space may grow by only 256 MB
past what it holds once the bombs are built, so an allocation beyond the limits
anywhere, Python or the protobuf runtime, fails the test. The Python heap's peak
is traced on every bomb, and must stay within a bound of the bomb's own size.
`npm run fuzz` reports how long they take (fuzzing.py).
"""

import json
import pathlib
import subprocess
import sys

import bombs

HEADROOM = 256 * 1024 * 1024


def peak_bound(data: bytes) -> int:
    """The most the Python heap may grow while refusing `data`: a list slot (8 bytes) and a
    little more for each payload byte, room for the columns the limits accept, not for what
    a bomb claims (an iota of 2^40 devices, 10^9 children)."""
    return 16 * len(data) + 1024 * 1024


def measure() -> None:
    """Decodes every bomb under an address-space cap; prints what each gave as JSON."""
    import resource
    import tracemalloc

    from colocated_wire import DecodeError, deserialize_specs

    payloads = bombs.bombs()
    size = next(
        int(line.split()[1]) * 1024
        for line in pathlib.Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmSize:")
    )
    resource.setrlimit(resource.RLIMIT_AS, (size + HEADROOM, resource.RLIM_INFINITY))

    results = {}
    for name, (data, _, _) in payloads.items():
        tracemalloc.start()
        try:
            deserialize_specs(data)
            outcome = ["decoded"]
        except DecodeError as e:
            outcome = [e.code, e.path]
        except MemoryError:
            outcome = ["MemoryError"]
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        results[name] = {"outcome": outcome, "python_peak": peak}
    print(json.dumps(results))


def test_bombs_fail_in_bounded_memory():
    code = f"import sys; sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r}); "
    code += "import test_fuzz_bombs; test_fuzz_bombs.measure()"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    results = json.loads(run.stdout.strip().splitlines()[-1])
    for name, (data, code_, path) in bombs.bombs().items():
        got = results[name]
        assert got["outcome"] == [code_, path], name
        assert got["python_peak"] < peak_bound(data), (name, got["python_peak"])
