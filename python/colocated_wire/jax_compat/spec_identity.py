"""How PartitionSpecs are named in caches, on every supported JAX.

JAX 0.10 interns PartitionSpecs (equal specs are one object) and lets them be
weakly referenced. Before 0.10 neither holds: a program's leaves each carry an
equal but distinct spec, so a cache keyed by `id(spec)` misses on every leaf
(right, but about 11x slower over many leaves), and a WeakValueDictionary of
specs cannot hold one. There, a spec is keyed by itself (it hashes by value)
and lifted specs are kept in a bounded plain dict instead.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, MutableMapping
from typing import Any

from jax.sharding import PartitionSpec

# Whether equal PartitionSpecs are one object (JAX >= 0.10).
INTERNED = PartitionSpec("x") is PartitionSpec("x")


def _by_value(spec: PartitionSpec) -> Hashable:
    return spec


spec_key: Callable[[PartitionSpec], Hashable]
"""What names a spec in a cache key: its id where JAX interns specs, else the spec."""
spec_key = id if INTERNED else _by_value


def _weakly_referenceable() -> bool:
    try:
        weakref.ref(PartitionSpec())
    except TypeError:
        return False
    return True


class BoundedSpecs(dict):
    """A dict of lifted specs that empties itself when full, for specs JAX will not let be
    weakly referenced."""

    MAX = 4096

    def __setitem__(self, key: Any, value: Any) -> None:
        if len(self) >= self.MAX:
            self.clear()
        super().__setitem__(key, value)


def lifted_specs() -> MutableMapping[bytes, PartitionSpec]:
    """A cache of lifted specs by their message's bytes: weak where JAX allows it."""
    if WEAK:
        return weakref.WeakValueDictionary()
    return BoundedSpecs()


WEAK = _weakly_referenceable()
