"""The str key pool of a TreeDef, front-coded (colocated.v1.1).

JAX sorts a dict's keys, so the pool in first-use order is mostly sorted too
and neighbours share long prefixes ("decoder_block_0", "decoder_block_1"):
each key is written as the count of leading UTF-8 bytes it shares with the
key before it, then the bytes that follow. `key_text` holds those bytes and
`key_sizes` the two counts per key. src/entries/tree-keys.ts is the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.schema_version import field_since, require_version

_TEXT_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "key_text")


def front_code(keys: Sequence[str]) -> tuple[bytes, list[int]]:
    """(key_text, key_sizes) of a pool of str keys."""
    parts: list[bytes] = []
    sizes: list[int] = []
    prev = b""
    for key in keys:
        raw = key.encode()
        p = _common_prefix(prev, raw)
        parts.append(raw[p:])
        sizes += (p, len(raw) - p)
        prev = raw
    return b"".join(parts), sizes


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def str_pool(msg: tree_pb2.TreeDef, path: str, minor: int, max_bytes: int) -> Sequence[str]:
    """The str keys of the pool: `strings`, or the front-coded `key_text` and `key_sizes`,
    checked against each other and the payload byte limit (expanded keys included)."""
    text, sizes = msg.key_text, msg.key_sizes
    if not text and not sizes:
        return msg.strings
    require_version(f"{path}.key_text", "key_text", _TEXT_SINCE, minor)
    if msg.strings:
        detail = "the str keys are in strings or in key_text, not both"
        raise DecodeError(f"{path}.key_text", "invalid-tree", detail)
    if len(sizes) % 2:
        raise DecodeError(f"{path}.key_sizes", "invalid-tree", f"{len(sizes)} sizes are not pairs")
    keys: list[str] = []
    prev = b""
    at = total = 0
    for i in range(0, len(sizes), 2):
        prefix, suffix = sizes[i], sizes[i + 1]
        if prefix > len(prev):
            raise DecodeError(
                f"{path}.key_sizes[{i}]",
                "invalid-tree",
                f"key {i // 2} shares {prefix} bytes with a key of {len(prev)}",
            )
        if suffix > len(text) - at:
            raise DecodeError(
                f"{path}.key_sizes[{i + 1}]",
                "invalid-tree",
                f"key {i // 2} takes {suffix} bytes, only {len(text) - at} are left in key_text",
            )
        total += prefix + suffix
        if total > max_bytes:
            raise DecodeError(
                f"{path}.key_sizes[{i}]",
                "limit-exceeded",
                f"the keys expand past the limit of {max_bytes} bytes",
            )
        raw = prev[:prefix] + text[at : at + suffix]
        at += suffix
        try:
            keys.append(raw.decode())
        except UnicodeDecodeError:
            raise DecodeError(
                f"{path}.key_text", "invalid-value", f"key {i // 2} is not valid UTF-8"
            ) from None
        prev = raw
    if at != len(text):
        raise DecodeError(
            f"{path}.key_text", "invalid-tree", f"{len(text) - at} bytes of key_text are not used"
        )
    return keys
