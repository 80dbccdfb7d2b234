"""Limits a decoder enforces before it allocates anything.

A payload of a few bytes can describe an iota of billions of devices or a
tree millions of levels deep. Each count is checked against these limits
before the decoder materializes it. The defaults are docs/wire-format.md's.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DecodeLimits:
    max_payload_bytes: int = 64 * 1024 * 1024
    max_table_entries: int = 1_000_000
    max_devices_per_list: int = 4_194_304
    max_rank: int = 64
    max_tree_nodes: int = 10_000_000
    max_tree_depth: int = 1_000
    max_unknown_fields: int = 1_000_000  # fields of a newer minor version in one payload


DEFAULT_LIMITS = DecodeLimits()
