"""The errors the JAX plugin raises, typed so that code written for JAX still catches them.

JAX's colocated Python raises ValueError for a device id a process lacks (JAX
0.4.38 a KeyError, from its dict of devices) and TypeError for a value it cannot
pickle. colocated_wire raises LiftError (a LookupError) and EncodeError for those
faults, so at the plugin boundary each is a subclass of JAX's types and ours: for a
missing device `except ValueError`, `except KeyError` and `except LiftError` all work.
"""

from __future__ import annotations

from colocated_wire import EncodeError, FunctionNotAvailableError, LiftError
from colocated_wire import PickleNotAllowedError as PickleNotAllowed


class UnsupportedJaxError(RuntimeError):
    """This JAX is outside the versions the plugin supports, or lacks the names it replaces."""


class PluginEncodeError(EncodeError):
    """A value colocated.v1 cannot write; `path` names where it is in the payload."""

    def __init__(self, path: str, detail: str):
        super().__init__(detail, path)


class PluginEncodeTypeError(PluginEncodeError, TypeError):
    """A value that cannot be written, where JAX raises TypeError (it does not pickle)."""


class PluginLiftError(LiftError, KeyError, ValueError):
    """A valid payload names what this process lacks (JAX: ValueError for a missing device,
    KeyError on 0.4.38), so code written for either JAX catches it."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its key; this one is a message, shown as it is.
        return Exception.__str__(self)


class PickleNotAllowedError(FunctionNotAvailableError, PickleNotAllowed):
    """A pickled function or value arrived and the plugin was installed without
    allow_pickle=True (colocated_wire's PickleNotAllowedError, and JAX's type for a function
    that cannot run)."""
