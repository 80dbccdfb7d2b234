"""Enum maps derived from the generated enums, so no list of wire values is written by hand."""

from __future__ import annotations

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper


def wire_names(enum: EnumTypeWrapper, prefix: str) -> dict[int, str]:
    """Each value of a generated enum but UNSPECIFIED (0), to its name without `prefix`."""
    return {value: name.removeprefix(prefix) for name, value in enum.items() if value}
