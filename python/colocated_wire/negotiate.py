"""Schema version negotiation, in the manner of IFRT Proxy.

Each side supports a range of colocated.v1 minor versions. Both take
min(client max, server max); if that is below either side's minimum there
is no common version, and the error names both ranges. The TypeScript twin
is src/rpc/client/negotiate.ts.
"""

from __future__ import annotations

from typing import NamedTuple

from colocated_wire.version import SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION


class VersionRange(NamedTuple):
    """The minor versions of colocated.v1 one side reads and writes, both ends included."""

    min_version: int
    max_version: int

    def __str__(self) -> str:
        major = SCHEMA_MAJOR_VERSION
        return f"{major}.{self.min_version}–{major}.{self.max_version}"


# This library reads and writes every minor version up to its own (an encoder targets any).
DEFAULT_VERSION_RANGE = VersionRange(0, SCHEMA_MINOR_VERSION)


class VersionMismatchError(ValueError):
    """The client's and the server's version ranges have no version in common."""


def check_range(r: VersionRange, side: str) -> None:
    """Raises ValueError unless `r` is a non-empty range of non-negative versions."""
    if r.min_version < 0 or r.min_version > r.max_version:
        raise ValueError(f"the {side}'s version range {r} is empty or negative")


def negotiate_version(client: VersionRange, server: VersionRange) -> int:
    """min(client max, server max), if that lies in both ranges; else VersionMismatchError."""
    check_range(client, "client")
    check_range(server, "server")
    version = min(client.max_version, server.max_version)
    if version < client.min_version or version < server.min_version:
        raise VersionMismatchError(
            f"no common colocated.v1 version: client supports {client}, server {server}"
        )
    return version
