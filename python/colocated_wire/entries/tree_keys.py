"""The str key pool of a TreeDef: `strings` (1.0), front-coded (1.1) or a trie
of key parts (1.3), whichever the writer found smallest.

JAX sorts a dict's keys, so the pool in first-use order is mostly sorted too
and neighbours share long prefixes ("decoder_block_0", "decoder_block_1"):
front coding writes each key as the count of leading UTF-8 bytes it shares
with the key before it, then the bytes that follow (`key_text` holds those
bytes and `key_sizes` the two counts per key). src/entries/tree-keys.ts is the
same.
"""

from __future__ import annotations

from collections.abc import Sequence

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.entries import key_trie
from colocated_wire.entries.front_code import front_code
from colocated_wire.errors import DecodeError
from colocated_wire.schema_version import field_since, require_version

_TEXT_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "key_text")
_TRIE_SINCE = field_since(tree_pb2.TreeDef.DESCRIPTOR, "key_trie")


def write_key_pool(msg: tree_pb2.TreeDef, keys: Sequence[str], target: int) -> None:
    """Writes the str key pool for a target: a trie of key parts (1.3) when that is smaller,
    else front-coded (1.1)."""
    text, sizes = front_code(keys)
    coded = tree_pb2.TreeDef(key_text=text, key_sizes=sizes)
    if target >= _TRIE_SINCE:
        trie = tree_pb2.TreeDef(key_trie=key_trie.build_key_trie(keys))
        if trie.ByteSize() < coded.ByteSize():
            msg.key_trie.CopyFrom(trie.key_trie)
            return
    msg.key_text = text
    msg.key_sizes.extend(sizes)


def str_pool(
    msg: tree_pb2.TreeDef, path: str, minor: int, max_keys: int, max_bytes: int
) -> Sequence[str]:
    """The str keys of the pool: `strings`, the front-coded `key_text` and `key_sizes`, or
    `key_trie`, checked against each other and the limits (expanded keys included)."""
    text, sizes = msg.key_text, msg.key_sizes
    if msg.HasField("key_trie"):
        require_version(f"{path}.key_trie", "key_trie", _TRIE_SINCE, minor)
        if msg.strings or text or sizes:
            detail = "the str keys are in one of strings, key_text and key_trie"
            raise DecodeError(f"{path}.key_trie", "invalid-tree", detail)
        return key_trie.read_key_trie(msg.key_trie, path, max_keys, max_bytes)
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
