"""The memory kind a sharding names, as each sharding entry writes, checks and lifts it."""

from __future__ import annotations

from typing import Any

import jax
from google.protobuf.message import Message

from colocated_wire.errors import DecodeError, LiftError


def lower_memory_kind(sharding: Any, device: jax.Device) -> str | None:
    """The memory kind to write: None when it is the device's default.

    JAX resolves `memory_kind=None` to the default kind when a sharding is
    built (`NamedSharding(mesh, P()).memory_kind == "device"` on CPU), so the
    two cannot be told apart; the canonical form omits the default.
    """
    kind = sharding.memory_kind
    if kind is None:
        return None
    try:
        default = device.default_memory().kind
    except Exception:  # a backend without memories: keep what the sharding says
        return kind
    return None if kind == default else kind


def check_memory_kind(msg: Message, path: str) -> None:
    """A memory kind, when present, is not empty."""
    if msg.HasField("memory_kind") and not msg.memory_kind:
        raise DecodeError(f"{path}.memory_kind", "invalid-value", "an empty memory kind")


def lift_memory_kind(msg: Message, device: jax.Device) -> str | None:
    """The memory kind, which must be one that `device` (of this process) addresses."""
    if not msg.HasField("memory_kind"):
        return None
    kind = msg.memory_kind
    try:
        kinds = {m.kind for m in device.addressable_memories()}
    except Exception:  # a backend without memories: JAX decides
        return kind
    if kind not in kinds:
        have = ", ".join(sorted(kinds))
        raise LiftError(f"memory kind {kind!r} is not one of {device}'s ({have})")
    return kind
