"""The mutation fuzzer's Python half, the same as test/fuzz/*.ts step for step.

One xorshift32 seed makes the same mutated payloads from the same seed files
(test/fuzz/seeds/, test/corpus/newer/) in both languages, so their outcomes
can be compared line by line. Each payload must decode to a valid model (it
serializes, and that decodes and serializes to the same bytes) or raise
DecodeError. A LiftError is accepted only where the worker, not the payload,
is the reason (see LIFT_REASONS); anything else is a failure.
"""

from __future__ import annotations

import dataclasses
import pathlib
import signal
import time
from typing import Any

import jax

from colocated_wire import (
    DecodeError,
    LiftError,
    deserialize_program,
    deserialize_specs,
    deserialize_value,
    serialize_program,
    serialize_specs,
    serialize_value,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED_DIRS = [ROOT / "test" / "fuzz" / "seeds", ROOT / "test" / "corpus" / "newer"]
FUZZ_SEED = 0x5EEDC0DE
# Modules a fuzzed program may name (a worker's policy); nothing is called while decoding.
ALLOWED_MODULES = frozenset({"json"})
# What a LiftError may be about: this worker's devices, memories, node types, functions and
# PRNG impls, and a value's pickle, which a fuzzed payload is never trusted to run.
LIFT_REASONS = {
    "pickle": "arrived pickled",
    "device": "is not a CPU device of this process",
    "memory kind": "is not one of",
    "node type": "is not defined in this process",
    "node data": "cannot rebuild pytree node",
    "function": "function ",
    "PRNG impl": "the PRNG impl ",
}


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Node:
    """The custom node of the seeds ("fuzzing.Node"): two children and one meta field."""

    a: Any
    b: Any
    tag: str = dataclasses.field(metadata={"static": True}, default="tag")


class Prng:
    """xorshift32, as test/fuzz/prng.ts."""

    def __init__(self, seed: int):
        self.state = seed & 0xFFFFFFFF or 1

    def next(self) -> int:
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x

    def below(self, n: int) -> int:
        return self.next() % n


# ---- mutations (test/fuzz/mutate.ts) -----------------------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


VARINTS = [0, 1, 127, 128, 1000, 65_536, 2**31 - 1, 2**31, 2**32 - 1, 10**9, 2**53]
BYTES = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x0A, 0x12]
VALUES = [
    varint(v)
    for v in [0, 1, 2, 3, 4, 7, 8, 9, 63, 64, 65, 127, 128, 1023, 1024, 2**31, 2**32 - 1]
    + [2**53, 2**64 - 1]
]


def mutate(seed: bytes, others: list[bytes], rng: Prng) -> bytes:
    data = list(seed)
    well_formed = rng.below(2) == 0
    for _ in range(1 + rng.below(4)):
        if well_formed:
            data = _mutate_tree(data, 7 + rng.below(3), rng)
        else:
            data = _mutate_bytes(data, others, rng)
    return bytes(data)


def _span(length: int, rng: Prng) -> tuple[int, int]:
    a = rng.below(length + 1)
    return a, min(length, a + rng.below(17))


def _mutate_bytes(data: list[int], others: list[bytes], rng: Prng) -> list[int]:
    n = len(data)
    op = rng.below(7)
    if op in (0, 1):
        if n == 0:
            return data
        i = rng.below(n)
        if op == 0:
            data[i] ^= 1 << rng.below(8)
        else:
            data[i] = BYTES[rng.below(len(BYTES))] if rng.below(2) else rng.below(256)
        return data
    if op == 2:
        return data[: rng.below(n + 1)]
    if op == 3:
        a, b = _span(n, rng)
        c = rng.below(n + 1)
        return data[:c] + data[a:b] + data[c:]
    if op == 4:
        other = list(others[rng.below(len(others))])
        a, b = _span(len(other), rng)
        c, d = _span(n, rng)
        return data[:c] + other[a:b] + data[d:]
    if op == 5:
        a, b = _span(n, rng)
        return data[:a] + data[b:]
    c = rng.below(n + 1)
    return data[:c] + list(varint(VARINTS[rng.below(len(VARINTS))])) + data[c:]


def _mutate_tree(data: list[int], op: int, rng: Prng) -> list[int]:
    tree = read_tree(bytes(data))
    nodes = all_nodes(tree) if tree is not None else []
    if not nodes:
        if data:
            i = rng.below(len(data))
            data[i] ^= 1 << rng.below(8)
        return data
    node, holder = nodes[rng.below(len(nodes))]
    at = next(i for i, n in enumerate(holder) if n is node)
    if op == 7:
        if node.wire_type == 0:
            node.value = VALUES[rng.below(len(VALUES))] if rng.below(2) else varint(rng.below(16))
        else:
            node.children = None
            node.value = b""
    elif op == 8:
        del holder[at]
    else:
        holder.insert(at, node)
    return list(write_tree(tree))


# ---- a payload as a tree of fields (test/fuzz/wire-tree.ts) ------------------


@dataclasses.dataclass(eq=False)
class WireNode:
    number: int
    wire_type: int
    value: bytes
    children: list[WireNode] | None = None


def read_tree(data: bytes, depth: int = 0) -> list[WireNode] | None:
    """The fields of `data`, or None if they are not a well-formed message."""
    nodes = []
    pos = 0

    def varint_end() -> int:
        for i in range(pos, min(pos + 10, len(data))):
            if data[i] < 0x80:
                return i + 1
        return -1

    def number(start: int, stop: int) -> int:
        return sum((data[i] & 0x7F) << (7 * (i - start)) for i in range(start, stop))

    while pos < len(data):
        tag_end = varint_end()
        if tag_end < 0 or tag_end - pos > 5:
            return None
        tag = number(pos, tag_end)
        pos = tag_end
        field, wire_type = tag >> 3, tag & 7
        if field == 0 or tag > 0xFFFFFFFF:
            return None
        start = pos
        if wire_type == 0:
            end = varint_end()
            if end < 0:
                return None
        elif wire_type == 2:
            length_end = varint_end()
            if length_end < 0:
                return None
            start = length_end
            end = start + number(pos, length_end)
        elif wire_type in (1, 5):
            end = pos + (8 if wire_type == 1 else 4)
        else:
            return None
        if end > len(data):
            return None
        value = data[start:end]
        pos = end
        children = read_tree(value, depth + 1) if wire_type == 2 and value and depth < 16 else None
        nodes.append(WireNode(field, wire_type, value, children))
    return nodes


def write_tree(nodes: list[WireNode]) -> bytes:
    out = bytearray()
    for node in nodes:
        out += varint(node.number << 3 | node.wire_type)
        value = write_tree(node.children) if node.children is not None else node.value
        if node.wire_type == 2:
            out += varint(len(value))
        out += value
    return bytes(out)


def all_nodes(nodes: list[WireNode]) -> list[tuple[WireNode, list[WireNode]]]:
    out = []
    for node in nodes:
        out.append((node, nodes))
        if node.children is not None:
            out += all_nodes(node.children)
    return out


# ---- running (test/fuzz/run.ts) ----------------------------------------------


def load_seeds() -> list[tuple[str, str, bytes]]:
    """(name, decoder, bytes) of every seed, in the order TypeScript loads them."""
    seeds = []
    for directory in SEED_DIRS:
        for path in sorted(directory.glob("*.bin")):
            decoder = next((d for d in ("program", "value") if path.stem.startswith(d)), "specs")
            seeds.append((path.stem, decoder, path.read_bytes()))
    return seeds


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def decode_and_check(decoder: str, data: bytes, budget_s: float = 5.0) -> str:
    """'decoded', '<code> <path>' of a DecodeError, 'lift-error <reason>', or 'failure: ...'."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        return _decode_and_check(decoder, data)
    except _Timeout:
        return f"failure: no answer in {budget_s} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _decode_and_check(decoder: str, data: bytes) -> str:
    def decode(payload, allowed):
        if decoder == "program":
            return deserialize_program(payload, allowed_modules=allowed)
        if decoder == "value":
            return deserialize_value(payload, allowed_modules=allowed)
        return deserialize_specs(payload)

    def encode(model):
        if decoder == "value":
            return serialize_value(model)
        return serialize_program(*model) if decoder == "program" else serialize_specs(*model)

    try:
        model = decode(data, ALLOWED_MODULES)
    except DecodeError as e:
        return f"{e.code} {e.path}"
    except LiftError as e:
        reason = next((r for r, text in LIFT_REASONS.items() if text in str(e)), None)
        if reason is None:
            return f"failure: LiftError {e}"
        return f"lift-error {reason}"
    except Exception as e:  # noqa: BLE001 - anything else is what the fuzzer looks for
        return f"failure: {type(e).__name__}: {e}"
    try:
        once = encode(model)
        twice = encode(decode(once, ALLOWED_MODULES))
    except Exception as e:  # noqa: BLE001
        return f"failure: a decoded model does not round-trip: {type(e).__name__}: {e}"
    return "decoded" if once == twice else "failure: re-encoding is not stable"


@dataclasses.dataclass
class Report:
    cases: int
    outcomes: list[str]
    slowest_s: float
    seconds: float

    def count(self, prefix: str) -> int:
        return sum(1 for o in self.outcomes if o.startswith(prefix))

    def by_code(self) -> dict[str, int]:
        codes: dict[str, int] = {}
        for o in self.outcomes:
            if o not in ("decoded",) and not o.startswith(("failure", "lift-error")):
                code = o.split(" ")[0]
                codes[code] = codes.get(code, 0) + 1
        return dict(sorted(codes.items(), key=lambda kv: -kv[1]))

    def failures(self) -> list[str]:
        return [o for o in self.outcomes if o.startswith("failure")]

    def summary(self) -> str:
        lifts = {o for o in self.outcomes if o.startswith("lift-error")}
        lines = [
            f"fuzz (Python, seed {FUZZ_SEED:x}): {self.cases} cases in {self.seconds:.1f} s",
            f"  decoded {self.count('decoded')}, DecodeError {sum(self.by_code().values())},"
            f" LiftError {self.count('lift-error')}, other {len(self.failures())}",
            *(f"    {code:24} {n}" for code, n in self.by_code().items()),
            *(f"    {o:24} {self.count(o)}" for o in sorted(lifts)),
            f"  slowest decode {self.slowest_s * 1000:.1f} ms",
        ]
        return "\n".join(lines)


def fuzz(cases: int, seed: int = FUZZ_SEED) -> Report:
    """Mutates the seeds `cases` times and decodes each result."""
    seeds = load_seeds()
    others = [s[2] for s in seeds]
    rng = Prng(seed)
    outcomes = []
    slowest = 0.0
    started = time.perf_counter()
    for _ in range(cases):
        _, decoder, data = seeds[rng.below(len(seeds))]
        payload = mutate(data, others, rng)
        t = time.perf_counter()
        outcomes.append(decode_and_check(decoder, payload))
        slowest = max(slowest, time.perf_counter() - t)
    return Report(cases, outcomes, slowest, time.perf_counter() - started)


# ---- the fuzz report's timings (npm run fuzz; test/fuzz/bomb-timings.fuzz.ts) --


def bomb_timings(runs: int = 5) -> dict[str, float]:
    """Median seconds to refuse each timed bomb (bombs.py), which must be refused."""
    import bombs

    payloads = bombs.bombs()
    medians = {}
    for name in bombs.TIMED_BOMBS:
        data, code, path = payloads[name]
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            try:
                deserialize_specs(data)
            except DecodeError as e:
                assert (e.code, e.path) == (code, path), (name, str(e))
            else:
                raise AssertionError(f"{name} decoded")
            samples.append(time.perf_counter() - started)
        medians[name] = sorted(samples)[runs // 2]
    return medians


if __name__ == "__main__":
    import json
    import sys

    if sys.argv[1:] != ["bomb-timings"]:
        sys.exit("usage: fuzzing.py bomb-timings")
    print(json.dumps(bomb_timings()))
