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
from collections.abc import Callable
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
    _ids: set[int] = dataclasses.field(default_factory=set)  # of objects[:_counted]
    _counted: int = 0

    @property
    def lifted_ids(self) -> set[int]:
        """id() of each object in `objects`: a cache hit already handed out in this table is not
        handed out again, so distinct entries stay distinct objects. Counted when asked, as
        few entries ask."""
        ids, objects = self._ids, self.objects
        for k in range(self._counted, len(objects)):
            ids.add(id(objects[k]))
        self._counted = len(objects)
        return ids


# A plan of an entry lifted from its message each time (a kind without plans, or an entry
# whose lift reads more than a plan holds).
_FROM_MESSAGE = object()


def lift_table(refs: References, path: str = "table") -> list[Any]:
    """One object per entry of a checked table, in index order."""
    if refs.plans is None:
        refs.plans = [None] * len(refs.kinds)
    plans = refs.plans
    objects: list[Any] = []
    ctx = LiftContext(objects, None)  # one context, its facts set per entry
    i = 0
    try:
        for i, facts in enumerate(refs.facts):
            step = plans[i]
            if type(step) is not tuple:  # not planned yet, or lifted from its message
                step = _step(refs, i)
            ctx.facts = facts
            objects.append(step[0](step[1], ctx))
    except LiftError as e:
        raise LiftError(f"{path}[{i}].{refs.kinds[i]}: {e}") from e
    except (ValueError, TypeError, RuntimeError) as e:
        raise LiftError(f"{path}[{i}].{refs.kinds[i]}: JAX refused the object: {e}") from e
    return objects


def _step(refs: References, i: int) -> tuple[Callable[[Any, LiftContext], Any], Any]:
    """How entry i lifts, (function, its first argument); a plan is kept in `refs.plans` as
    (lift_planned, plan), so lifting the table again is one call per entry."""
    kind = refs.kinds[i]
    if kind is None:  # a kind of a newer minor version: kept byte for byte
        return _lift_unknown, refs.entries[i]
    codec = ENTRIES[kind]
    msg = getattr(refs.entries[i], kind)
    plans = refs.plans
    if plans[i] is None:
        plans[i] = _plan(codec, msg)
    return (codec.lift, msg) if plans[i] is _FROM_MESSAGE else plans[i]


def _plan(codec: Any, msg: Any) -> Any:
    """(lift_planned, what lifting needs of a checked entry's message as plain values): reading
    a message's fields costs more than building most of what they describe, and a program sends
    the same table on every call."""
    make = getattr(codec, "plan", None)
    plan = None if make is None else make(msg)
    return _FROM_MESSAGE if plan is None else (codec.lift_planned, plan)


def _lift_unknown(entry: Any, ctx: LiftContext) -> UnknownEntry:
    """An entry of a kind of a newer minor version, as its bytes."""
    return UnknownEntry(entry.SerializeToString(deterministic=True))
