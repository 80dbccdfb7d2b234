"""Front coding (colocated.v1.1): sorted strings such as "layer_0001",
"layer_0002" share long prefixes, so each is written as the count of leading
UTF-8 bytes it shares with the one before, then the bytes that follow. The key
pool and the key trie's labels are written so. src/entries/front-code.ts is the
same.
"""

from __future__ import annotations

from collections.abc import Sequence


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
