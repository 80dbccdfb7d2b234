"""The limits, read from the descriptors, and the wire scan that counts against them.

The limits are declared once, in proto/colocated/v1/limit.proto and the `(limit)`
option of each repeated field. Both languages read them from their generated
descriptors and compare what they read with test/vectors/limits.json, which
test/wire-scan.test.ts writes from the TypeScript descriptors.
"""

import dataclasses
import importlib
import json
import pkgutil
from pathlib import Path

import pytest

from colocated_wire._gen.colocated import v1 as generated
from colocated_wire._gen.colocated.v1 import limit_pb2, payload_pb2
from colocated_wire.errors import DecodeError
from colocated_wire.limits import DEFAULT_LIMITS, DecodeLimits, limit_name
from colocated_wire.wire_scan import scan_wire

LIMITS_JSON = Path(__file__).resolve().parents[2] / "test" / "vectors" / "limits.json"


def _messages():
    """Every message of colocated.v1, from each generated _pb2 module."""
    for module in pkgutil.iter_modules(generated.__path__):
        if module.name.endswith("_pb2"):
            file = importlib.import_module(f"{generated.__name__}.{module.name}").DESCRIPTOR
            stack = list(file.message_types_by_name.values())
            while stack:
                message = stack.pop()
                stack.extend(message.nested_types)
                yield message


def _read() -> dict:
    """The limits as limits.json holds them, read from the Python descriptors."""
    defaults = {
        value.name: value.GetOptions().Extensions[limit_pb2.default_max]
        for value in limit_pb2.Limit.DESCRIPTOR.values
        if value.number != limit_pb2.LIMIT_UNSPECIFIED
    }
    fields = {
        fd.full_name: limit_pb2.Limit.Name(fd.GetOptions().Extensions[limit_pb2.limit])
        for message in _messages()
        for fd in message.fields
        if fd.is_repeated
    }
    return {"defaults": defaults, "fields": dict(sorted(fields.items()))}


def test_the_limits_are_those_typescript_reads():
    assert _read() == json.loads(LIMITS_JSON.read_text())


def test_every_repeated_field_has_a_limit():
    fields = _read()["fields"]
    assert fields
    assert [name for name, limit in fields.items() if limit == "LIMIT_UNSPECIFIED"] == []


def test_decode_limits_has_one_field_per_limit_and_its_default():
    by_field = {
        limit_name(limit_pb2.Limit.DESCRIPTOR.values_by_name[name]): value
        for name, value in _read()["defaults"].items()
    }
    assert [f.name for f in dataclasses.fields(DecodeLimits)] == list(by_field)
    assert dataclasses.asdict(DEFAULT_LIMITS) == by_field


def _two_values(fd) -> bytes:
    """Two values of a repeated field, each as short as its wire type allows."""
    delimited = fd.type in (fd.TYPE_MESSAGE, fd.TYPE_STRING, fd.TYPE_BYTES)
    record = bytes([fd.number << 3 | 2, 0] if delimited else [fd.number << 3, 0])
    return record + record


@pytest.mark.parametrize("name", sorted(json.loads(LIMITS_JSON.read_text())["fields"]))
def test_the_scan_counts_each_repeated_field_against_its_limit(name):
    message = next(m for m in _messages() if name.startswith(f"{m.full_name}."))
    fd = message.fields_by_name[name.removeprefix(f"{message.full_name}.")]
    option = fd.GetOptions().Extensions[limit_pb2.limit]
    field = limit_name(limit_pb2.Limit.DESCRIPTOR.values_by_number[option])
    data = _two_values(fd)
    assert scan_wire(data, message, dataclasses.replace(DEFAULT_LIMITS, **{field: 2})) == 0
    with pytest.raises(DecodeError) as error:
        scan_wire(data, message, dataclasses.replace(DEFAULT_LIMITS, **{field: 1}))
    assert (error.value.code, error.value.path) == ("limit-exceeded", fd.name)


HEADER = bytes([0x0A, 4, 0x08, 1, 0x18, 1])  # major 1, kind specs


@pytest.mark.parametrize(
    ("records", "limit", "outcome"),
    [
        # A run of byte-identical records is counted at once: each count, to the limit and past it.
        (b"\x0a\x00" * 5, 5, 0),
        (b"\x0a\x00" * 6, 5, "table.entries"),
        (b"\x0a\x00" * 3 + b"\x0a\x02\x0a\x00" + b"\x0a\x00" * 2, 6, 0),
        (b"\x0a\x00" * 3 + b"\x0a\x02\x0a\x00" + b"\x0a\x00" * 3, 6, "table.entries"),
    ],
)
def test_runs_of_identical_entries_are_counted_exactly(records, limit, outcome):
    data = HEADER + bytes([0x12, len(records)]) + records
    limits = dataclasses.replace(DEFAULT_LIMITS, max_table_entries=limit)
    root = payload_pb2.SpecsPayload.DESCRIPTOR
    if outcome == 0:
        assert scan_wire(data, root, limits) == 0
    else:
        with pytest.raises(DecodeError) as error:
            scan_wire(data, root, limits)
        assert (error.value.code, error.value.path) == ("limit-exceeded", outcome)


@pytest.mark.parametrize(("copies", "limit", "outcome"), [(7, 7, 7), (8, 7, "payload")])
def test_runs_of_identical_unknown_fields_are_counted_exactly(copies, limit, outcome):
    data = HEADER + b"\xf8\x07\x00" * copies
    limits = dataclasses.replace(DEFAULT_LIMITS, max_unknown_fields=limit)
    root = payload_pb2.SpecsPayload.DESCRIPTOR
    if outcome == copies:
        assert scan_wire(data, root, limits) == copies
    else:
        with pytest.raises(DecodeError) as error:
            scan_wire(data, root, limits)
        assert (error.value.code, error.value.path) == ("limit-exceeded", outcome)
