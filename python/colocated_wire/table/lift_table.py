"""Lifting a checked table: JAX objects, in one forward pass, by each kind's `lift`.

Entries refer only backwards, so lifting entry i finds its dependencies
already lifted. Each entry becomes exactly one Python object, shared by
everything that refers to it: two leaves on one sharding hold the same
NamedSharding instance, and all shardings on one mesh the same Mesh.
Lifting trusts the check for everything about the payload itself; what can
still fail is this process (a device id it lacks, a memory kind its backend
does not have), which is a `LiftError`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from colocated_wire.entries import ENTRIES
from colocated_wire.errors import LiftError
from colocated_wire.table.references import References
from colocated_wire.unknown import UnknownEntry


@dataclasses.dataclass(slots=True)
class LiftContext:
    """The objects lifted before a message, and the facts its check returned."""

    objects: list[Any]
    facts: Any
    # id() of each object in `objects`: a cache hit already handed out in this table is not
    # handed out again, so distinct entries stay distinct objects.
    lifted_ids: set[int] = dataclasses.field(default_factory=set)


# A plan of an entry lifted from its message each time (a kind without plans, or an entry
# whose lift reads more than a plan holds).
_FROM_MESSAGE = object()


def _plan(codec: Any, msg: Any) -> Any:
    """What lifting needs of a checked entry's message, as plain values: reading a message's
    fields costs more than building most of what they describe, and a program sends the same
    table on every call."""
    make = getattr(codec, "plan", None)
    plan = None if make is None else make(msg)
    return _FROM_MESSAGE if plan is None else plan


def lift_table(refs: References, path: str = "table") -> list[Any]:
    """One object per entry of a checked table, in index order."""
    objects: list[Any] = []
    lifted_ids: set[int] = set()
    entries, kinds, facts = refs.entries, refs.kinds, refs.facts
    plans = refs.plans if refs.plans is not None else [None] * len(kinds)
    ctx = LiftContext(objects, None, lifted_ids)  # one context, its facts set per entry
    for i, kind in enumerate(kinds):
        try:
            if kind is None:  # a kind of a newer minor version: kept byte for byte
                obj = UnknownEntry(entries[i].SerializeToString(deterministic=True))
            else:
                ctx.facts = facts[i]
                codec = ENTRIES[kind]
                plan = plans[i]
                if plan is None:
                    plan = plans[i] = _plan(codec, getattr(entries[i], kind))
                if plan is _FROM_MESSAGE:
                    obj = codec.lift(getattr(entries[i], kind), ctx)
                else:
                    obj = codec.lift_planned(plan, ctx)
        except LiftError as e:
            raise LiftError(f"{path}[{i}].{kind}: {e}") from e
        except (ValueError, TypeError, RuntimeError) as e:
            raise LiftError(f"{path}[{i}].{kind}: JAX refused the object: {e}") from e
        objects.append(obj)
        lifted_ids.add(id(obj))
    return objects
