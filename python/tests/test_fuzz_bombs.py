"""Bombs: payloads that claim far more than they hold, or hold more than the limits allow.

Each must fail fast with its DecodeError in bounded memory. They are decoded
in a fresh process whose address space may grow by only 256 MB past what it
holds once the bombs are built, so an allocation beyond the limits anywhere,
Python or the protobuf runtime, fails the test; the Python heap's peak is
measured too (tracemalloc). The same bombs are in test/fuzz-bombs.test.ts.
"""

import json
import pathlib
import subprocess
import sys

from fuzzing import varint

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "bad"
HEADER = bytes([0x0A, 4, 0x08, 1, 0x18, 1])  # major 1, kind specs
HEADROOM = 256 * 1024 * 1024


def field(number: int, content: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(content)) + content


def tree(kinds: bytes, arities: bytes = b"") -> bytes:
    treedef = field(1, kinds) + (field(2, arities) if arities else b"")
    return HEADER + field(2, b"") + field(3, field(1, treedef))


def bombs() -> dict[str, tuple[bytes, str, str]]:
    """name: (payload, code, path)."""

    def corpus(name):
        return (CORPUS / f"{name}.bin").read_bytes()

    return {
        "an iota claiming 2^40 devices": (
            corpus("limit-exceeded--iota-of-2-to-the-40-devices"),
            "limit-exceeded",
            "table[0].device_list.iota.iota.reshape_dims",
        ),
        "a tile assignment claiming 2^60 tiles": (
            corpus("limit-exceeded--2-to-the-60-tiles"),
            "limit-exceeded",
            "table[7].gspmd_sharding.tile_assignment.dims",
        ),
        "a tree claiming 10^9 nodes (one arity)": (
            corpus("invalid-tree--arity-of-a-billion"),
            "invalid-tree",
            "specs.treedef.arities[0]",
        ),
        "a tree nested 10^6 deep": (
            tree(b"\x04" * 10**6 + b"\x01", b"\x01" * 10**6),
            "limit-exceeded",
            "specs.treedef.kinds[1000]",
        ),
        "a tree of 10^7 + 1 nodes": (
            tree(b"\x01" * (10**7 + 1)),
            "limit-exceeded",
            "specs.treedef.kinds",
        ),
        "a list claiming 10^9 children among 10^6 nodes": (
            tree(b"\x04" + b"\x01" * 10**6, varint(10**9)),
            "invalid-tree",
            "specs.treedef.arities[0]",
        ),
        "1,000,001 empty table entries": (
            HEADER + field(2, b"\x0a\x00" * 1_000_001),
            "limit-exceeded",
            "table.entries",
        ),
        "a device list of 4,194,305 ids": (
            HEADER + field(2, field(1, field(1, field(2, field(1, b"\x01" * 4_194_305))))),
            "limit-exceeded",
            "table[0].device_list.plain.ids",
        ),
        "1,000,001 unknown fields": (
            HEADER + b"\xf8\x07\x00" * 1_000_001,
            "limit-exceeded",
            "payload",
        ),
        "a payload of 64 MiB and a byte": (
            HEADER + bytes(64 * 1024 * 1024 + 1 - len(HEADER)),
            "limit-exceeded",
            "payload",
        ),
    }


def measure() -> None:
    """Decodes every bomb under an address-space cap; prints what each gave as JSON."""
    import resource
    import time
    import tracemalloc

    from colocated_wire import DecodeError, deserialize_specs

    payloads = bombs()
    size = next(
        int(line.split()[1]) * 1024
        for line in pathlib.Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmSize:")
    )
    resource.setrlimit(resource.RLIMIT_AS, (size + HEADROOM, resource.RLIM_INFINITY))

    def decode(data):
        try:
            deserialize_specs(data)
            return ["decoded"]
        except DecodeError as e:
            return [e.code, e.path]
        except MemoryError:
            return ["MemoryError"]

    results = {}
    for name, (data, _, _) in payloads.items():
        started = time.perf_counter()
        outcome = decode(data)
        seconds = time.perf_counter() - started
        peak = 0
        if seconds < 0.1:  # again, traced; tracing makes the slower ones slower still
            tracemalloc.start()
            decode(data)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        results[name] = {"outcome": outcome, "seconds": seconds, "python_peak": peak}
    print(json.dumps(results))


def test_bombs_fail_fast_in_bounded_memory():
    code = f"import sys; sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r}); "
    code += "import test_fuzz_bombs; test_fuzz_bombs.measure()"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    results = json.loads(run.stdout.strip().splitlines()[-1])
    for name, (_, code_, path) in bombs().items():
        got = results[name]
        assert got["outcome"] == [code_, path], name
        assert got["seconds"] < 2, name
        assert got["python_peak"] < 64 * 1024 * 1024, name
