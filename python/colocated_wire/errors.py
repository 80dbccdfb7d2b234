"""Errors raised by colocated_wire.

Decoding reads bytes from a peer that is not trusted, so everything that is
wrong with a payload is one exception type, `DecodeError`, carrying a `path`
(proto field names in snake_case, as in docs/wire-format.md) and a `code`
from the table in that document. TypeScript raises the same path and code
for the same bad payload, so one corpus of bad payloads tests both.

`EncodeError` is for models that cannot be written (an unsupported sharding,
a dict with non-string keys, ...). `LiftError` is for payloads that are
well formed but cannot be turned into objects *here*: a device id this
worker lacks, a function in a module that is not allowed.
"""

from __future__ import annotations

# The codes of docs/wire-format.md, "Errors: path and code".
DECODE_ERROR_CODES = frozenset(
    {
        "malformed",
        "unsupported-version",
        "wrong-payload-kind",
        "missing",
        "reference-out-of-range",
        "forward-reference",
        "wrong-entry-kind",
        "unknown-enum",
        "invalid-mesh",
        "duplicate-device",
        "invalid-iota",
        "unknown-axis",
        "repeated-axis",
        "invalid-tree",
        "invalid-value",
        "limit-exceeded",
        "writer-mismatch",
    }
)


class DecodeError(ValueError):
    """A payload is not a valid colocated.v1 payload."""

    def __init__(self, path: str, code: str, detail: str):
        if code not in DECODE_ERROR_CODES:
            raise AssertionError(f"unknown decode error code {code!r}")
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.code = code
        self.detail = detail


class EncodeError(ValueError):
    """A model cannot be written in the colocated.v1 format; `path`, when known, names where.

    An entry's lowering gives a path below its object (".dtype"); the specs that hold the
    object put theirs in front (`under`), as TypeScript's lowering names the whole path.
    """

    def __init__(self, detail: str, path: str | None = None):
        super().__init__(detail if path is None else f"{path}: {detail}")
        self.path = path
        self.detail = detail

    def under(self, prefix: str) -> EncodeError:
        """The same error at `prefix` followed by its own path below an object."""
        path = self.path or ""
        below = path if path.startswith((".", "[")) else ""
        return EncodeError(self.detail, prefix + below)


class EncodeTypeError(EncodeError, TypeError):
    """A value that cannot be written because it does not pickle (JAX raises TypeError)."""

    def under(self, prefix: str) -> EncodeTypeError:
        """The same error, a TypeError still, at `prefix` followed by its own path."""
        moved = super().under(prefix)
        return EncodeTypeError(moved.detail, moved.path)


class LiftError(LookupError):
    """A valid payload names something this process does not have."""


class PickleNotAllowedError(LiftError):
    """A payload holds a pickle, and the reader did not pass allow_pickle=True."""


class FunctionNotAvailableError(RuntimeError):
    """The payload's function was not loaded (pickle not allowed, ...)."""


class FunctionNotAllowedError(LiftError):
    """A function by name that no allow-list admits (deny by default)."""

    def __init__(self, message: str, module: str = "", qualname: str = ""):
        super().__init__(message)
        self.module = module
        self.qualname = qualname
