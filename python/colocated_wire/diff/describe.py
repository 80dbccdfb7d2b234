"""The words of a difference, written alike in Python and TypeScript (src/diff/describe.ts):
values as Python prints them where a reader knows them that way (PartitionSpec('x', None),
shapes as tuples), each rule simple enough that both languages follow it exactly."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def py_str(s: str) -> str:
    """A str as repr writes it, by the rules both languages follow: single quotes unless it
    holds ' and no ", and \\, the quote, \\t, \\n, \\r and \\xNN (below 0x20 and 0x7f) escaped.
    Other characters are kept, where repr would escape what it cannot print."""
    quote = '"' if "'" in s and '"' not in s else "'"
    out = [quote]
    for ch in s:
        code = ord(ch)
        if ch == "\\" or ch == quote:
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append(quote)
    return "".join(out)


def py_tuple(items: Sequence[str]) -> str:
    """Items as a Python tuple: (1, 2), (1,), ()."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def shape_text(shape: Sequence[int]) -> str:
    """A shape, as JAX prints one: (8, 4)."""
    return py_tuple([str(d) for d in shape])


def thousands(n: int) -> str:
    """1234567 as "1,234,567"."""
    return f"{n:,}"


def count_text(n: int, one: str, many: str) -> str:
    """A count with its noun: "1 leaf", "1,000 leaves"."""
    return f"{thousands(n)} {one if n == 1 else many}"


def list_text(texts: Sequence[str], most: int = 8) -> str:
    """The first `most` texts, then how many more: "'a', 'b' (and 3 more)"."""
    shown = ", ".join(texts[:most])
    return f"{shown} (and {thousands(len(texts) - most)} more)" if len(texts) > most else shown


def spec_entries_text(entries: list[Any]) -> str:
    """A PartitionSpec's entries (as the result holds them) as Python prints them:
    ('data', None, ('x', 'y'), UNCONSTRAINED)."""

    def entry(e: Any) -> str:
        if e is None:
            return "None"
        if isinstance(e, str):
            return py_str(e)
        if isinstance(e, list):
            return py_tuple([py_str(a) for a in e])
        return "UNCONSTRAINED"

    return py_tuple([entry(e) for e in entries])


def axis_set_text(axes: Sequence[str]) -> str:
    """An axis set (unreduced, reduced): {'x', 'y'}, or {} when empty."""
    return "{" + ", ".join(py_str(a) for a in axes) + "}"


def memory_kind_text(kind: str | None) -> str:
    """A memory kind, the default (None) as JAX names it."""
    return "device" if kind is None else kind


def change(a: str, b: str) -> str:
    """ "a to b": the two sides of a change in words."""
    return f"{a} to {b}"


def json_key(value: Any) -> str:
    """A value as the key of a group: its JSON, as TypeScript's JSON.stringify writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
