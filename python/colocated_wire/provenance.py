"""What a decoded payload held beyond its model, kept so that writing it again loses nothing.

JAX objects cannot hold unknown fields, nor (mostly) weak references, so the
record rides on the leaves tuple that `deserialize_specs` and
`deserialize_program` hand back, and goes when it goes. When those very
objects are serialized again, the table is seeded with the decoded table in
its order (so entries of unknown kinds keep their indices), and the unknown
fields of every message are grafted onto the freshly lowered ones. Only a
payload that has unknown fields is remembered; a new list of the same leaves
is a new model and is written canonically.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.protobuf.message import Message
from jax import tree_util

from colocated_wire.table.lower_table import TableBuilder
from colocated_wire.unknown_fields import graft_unknown_fields


@dataclasses.dataclass(frozen=True, eq=False)
class Origin:
    """A decoded payload: its message, its lifted table, and the objects handed out."""

    message: Message
    table: list[Any]
    # The objects handed to the caller that must come back unchanged, by identity.
    returned: tuple[Any, ...]


class DecodedLeaves(tuple):
    """A tuple of decoded leaves that remembers the payload it came from."""

    origin: Origin

    def __reduce__(self):
        return (tuple, (tuple(self),))  # a copy elsewhere is a plain tuple


# Flattened like the tuple it is, so JAX's tree utilities see no difference.
tree_util.register_pytree_node(DecodedLeaves, lambda t: (tuple(t), None), lambda _, c: tuple(c))


def remember(leaves: tuple, origin: Origin) -> tuple:
    """`leaves`, carrying `origin`."""
    out = DecodedLeaves(leaves)
    out.origin = origin
    return out


def origin_of(leaves: Any, *returned: Any) -> Origin | None:
    """The payload `leaves` came from, if every other object is the one that was handed out."""
    origin = getattr(leaves, "origin", None) if isinstance(leaves, DecodedLeaves) else None
    if origin is None or len(returned) != len(origin.returned):
        return None
    same = all(a is b for a, b in zip(returned, origin.returned, strict=True))
    return origin if same else None


_ENTRIES = frozenset({"colocated.v1.SharedObjectTable.entries"})


def seeded_table(origin: Origin | None, target_minor_version: int) -> TableBuilder:
    """A table builder that starts with the decoded table, in order, so indices hold."""
    builder = TableBuilder(target_minor_version)
    for obj in origin.table if origin else ():
        builder.add(obj)
    return builder


def kept_indices(origin: Origin | None, builder: TableBuilder) -> bool:
    """Whether a carried payload's entries kept their indices: equal decoded entries fold into
    one, which moves later indices, and then its trees must be lowered again."""
    return origin is not None and len(builder.table.entries) == len(origin.table)


def carry(origin: Origin | None, msg: Message, builder: TableBuilder) -> Message:
    """Grafts the decoded payload's unknown fields onto `msg` (its header says the version).

    Entries are matched by object, not position: equal decoded entries share one index.
    """
    if origin is None:
        return msg
    graft_unknown_fields(origin.message, msg, _ENTRIES)
    done = set()
    for old, obj in zip(origin.message.table.entries, origin.table, strict=True):
        index = builder.add(obj)  # known: the table was seeded with it
        if index not in done:
            done.add(index)
            graft_unknown_fields(old, msg.table.entries[index])
    return msg
