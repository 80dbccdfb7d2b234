"""A broken rule, and its two sides: a DecodeError when checking, an EncodeError when lowering.

An entry's rules return a Problem instead of raising, so that `lower` and
`check` apply the very same rule functions.
"""

from __future__ import annotations

from typing import NamedTuple

from colocated_wire.errors import DecodeError, EncodeError


class Problem(NamedTuple):
    """A broken rule: its DecodeError code, what is wrong, and where below the checked field."""

    code: str
    detail: str
    at: str = ""  # a path suffix such as ".axis_names[1]" or "[7]"; "" is the field itself


def raise_problem(path: str, problem: Problem | None) -> None:
    """Checking's side of a rule: raises a DecodeError at `path` plus the rule's suffix."""
    if problem is not None:
        raise DecodeError(path + problem.at, problem.code, problem.detail)


def refuse(what: str, problem: Problem | None) -> None:
    """Lowering's side of a rule: raises an EncodeError about `what`."""
    if problem is not None:
        raise EncodeError(f"{what}: {problem.detail}")
