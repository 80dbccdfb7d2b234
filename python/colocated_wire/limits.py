"""Limits a decoder enforces before it allocates anything.

A payload of a few bytes can describe an iota of billions of devices or a
tree millions of levels deep. Each count is checked against these limits
before the decoder materializes it. The limits and their defaults are
declared once, as the Limit enum of proto/colocated/v1/limit.proto; each
field here is named after its value (LIMIT_MAX_RANK is max_rank), as in
src/limits.ts (maxRank).
"""

from __future__ import annotations

import dataclasses

from google.protobuf.descriptor import EnumValueDescriptor

from colocated_wire._gen.colocated.v1 import limit_pb2

# What every value begins with (buf lint asks for it): the enum's name, LIMIT_.
_PREFIX = limit_pb2.Limit.DESCRIPTOR.name.upper() + "_"


def limit_name(value: EnumValueDescriptor) -> str:
    """The DecodeLimits field a Limit value names: LIMIT_MAX_RANK is max_rank."""
    return value.name.removeprefix(_PREFIX).lower()


def _defaults() -> dict[str, int]:
    """Each limit's default, the `default_max` option of its value in limit.proto."""
    return {
        limit_name(value): value.GetOptions().Extensions[limit_pb2.default_max]
        for value in limit_pb2.Limit.DESCRIPTOR.values
        if value.number != limit_pb2.LIMIT_UNSPECIFIED
    }


_DEFAULTS = _defaults()


@dataclasses.dataclass(frozen=True)
class DecodeLimits:
    max_payload_bytes: int = _DEFAULTS["max_payload_bytes"]
    max_table_entries: int = _DEFAULTS["max_table_entries"]
    max_devices_per_list: int = _DEFAULTS["max_devices_per_list"]
    max_rank: int = _DEFAULTS["max_rank"]
    max_tree_nodes: int = _DEFAULTS["max_tree_nodes"]
    max_tree_depth: int = _DEFAULTS["max_tree_depth"]
    max_unknown_fields: int = _DEFAULTS["max_unknown_fields"]  # fields of a newer minor version


DEFAULT_LIMITS = DecodeLimits()
