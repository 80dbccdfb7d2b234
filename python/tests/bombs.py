"""Bombs: payloads that claim far more than they hold, or hold more than the limits allow.

The same as test/fuzz/bombs.ts. test_fuzz_bombs.py decodes each in bounded memory;
`npm run fuzz` times two of them (fuzzing.py).
"""

import pathlib

from fuzzing import varint

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "bad"
HEADER = bytes([0x0A, 4, 0x08, 1, 0x18, 1])  # major 1, kind specs
# The bombs the fuzz report times: rejecting each must take under TARGET_SECONDS.
TIMED_BOMBS = ["1,000,001 empty table entries", "1,000,001 unknown fields"]
TARGET_SECONDS = 0.3


def field(number: int, content: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(content)) + content


def tree(kinds: bytes, arities: bytes = b"") -> bytes:
    treedef = field(1, kinds) + (field(2, arities) if arities else b"")
    return HEADER + field(2, b"") + field(3, field(1, treedef))


def corpus(name: str) -> bytes:
    return (CORPUS / f"{name}.bin").read_bytes()


def bombs() -> dict[str, tuple[bytes, str, str]]:
    """name: (payload, code, path)."""
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
