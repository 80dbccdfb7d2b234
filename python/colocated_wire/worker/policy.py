"""What a worker was told to allow: versions, functions by name, pickles.

Deny by default: a function by name runs only from a module given with
--allow-module or under a qualified name given with --allow-function, and a
pickled function only with --allow-pickle. The decoder applies the lists
before it imports anything, so a module that is not allowed is never
imported and a pickle that is not allowed is never run.
"""

from __future__ import annotations

import dataclasses

from colocated_wire.negotiate import DEFAULT_VERSION_RANGE, VersionRange


@dataclasses.dataclass(frozen=True)
class WorkerPolicy:
    """A worker's flags: its version range, allowed modules and functions, and pickles."""

    versions: VersionRange = DEFAULT_VERSION_RANGE
    allowed_modules: frozenset[str] = frozenset()
    allow_pickle: bool = False
    allowed_functions: frozenset[str] = frozenset()

    def describe_allowed(self) -> str:
        """The allow-lists, for messages: `modules a, b; functions c.f` or `none`."""
        parts = []
        if self.allowed_modules:
            parts.append(f"modules {', '.join(sorted(self.allowed_modules))}")
        if self.allowed_functions:
            parts.append(f"functions {', '.join(sorted(self.allowed_functions))}")
        return "; ".join(parts) or "none"
