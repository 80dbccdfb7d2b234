"""What differs outside the trees: the header's schema version and writer, a program's
function and devices, and a part one side lacks. TypeScript: src/diff/payload-causes.ts."""

from __future__ import annotations

from typing import Any

from colocated_wire.diff.compare_entries import EntryComparison
from colocated_wire.diff.describe import change, count_text, thousands
from colocated_wire.diff.groups import Cause, value_cause
from colocated_wire.diff.read_side import DiffSide
from colocated_wire.payload.writer import describe_writer


def header_cause(a: DiffSide, b: DiffSide) -> Cause | None:
    """The schema's minor version, when the headers differ in it."""
    ma, mb = a.minor_version, b.minor_version
    if ma == mb:
        return None
    text = f"schema version {change(f'colocated.v1.{ma}', f'colocated.v1.{mb}')}"
    return value_cause("header", ma, mb, text)


def writer_cause(a: DiffSide, b: DiffSide) -> Cause | None:
    """Who wrote the payloads (1.3), when their headers name different writers or only one does."""
    wa = describe_writer(a.writer) if a.writer else None
    wb = describe_writer(b.writer) if b.writer else None
    if wa == wb:
        return None
    return value_cause("writer", wa, wb, f"writer {change(wa or 'unnamed', wb or 'unnamed')}")


def function_cause(a: DiffSide, b: DiffSide, entries: EntryComparison) -> Cause | None:
    """A program's function: its name, or its pickle and the entries the pickle refers to."""
    fa, fb = a.function, b.function
    ja, jb = _function_json(fa), _function_json(fb)
    case_a, case_b = fa.WhichOneof("function"), fb.WhichOneof("function")
    if case_a == "pickled" and case_b == "pickled":
        pa, pb = fa.pickled, fb.pickled
        details = entries.pickle_details(pa.pickle, pb.pickle, list(pa.refs), list(pb.refs))
        if not details:
            return None
        text = ", ".join(["pickled function", *(d.text for d in details)])
        return Cause("function", "function", text, None, ja, jb, tuple(details))
    if ja == jb:
        if case_a != "by_name" and fa.SerializeToString() != fb.SerializeToString():
            return value_cause("function", ja, jb, "function of a newer minor version: it differs")
        return None
    return value_cause("function", ja, jb, f"function {change(_words(fa), _words(fb))}")


def devices_causes(a: DiffSide, b: DiffSide, entries: EntryComparison) -> list[Cause]:
    """A program's device list, compared by value."""
    return entries.entries(a.devices, b.devices)


def part_cause(name: str, in_a: bool, leaves: int) -> Cause:
    """A part one side has and the other lacks (a program's output specs), with its leaves."""
    pa, pb = ("present", "absent") if in_a else ("absent", "present")
    text = f"{name} specs {change(pa, pb)} ({count_text(leaves, 'leaf', 'leaves')})"
    return value_cause("part", in_a, not in_a, text)


def _function_json(fn: Any) -> dict[str, Any]:
    """A function in the result: {"name": "m.f"}, {"pickled": bytes}, {"unknown": bytes}."""
    case = fn.WhichOneof("function")
    if case == "by_name":
        return {"name": f"{fn.by_name.module}.{fn.by_name.qualname}"}
    if case == "pickled":
        return {"pickled": len(fn.pickled.pickle)}
    return {"unknown": len(fn.SerializeToString())}


def _words(fn: Any) -> str:
    case = fn.WhichOneof("function")
    if case == "by_name":
        return f"{fn.by_name.module}.{fn.by_name.qualname}"
    if case == "pickled":
        return f"a pickled function ({thousands(len(fn.pickled.pickle))} bytes)"
    return "a function of a newer minor version"
