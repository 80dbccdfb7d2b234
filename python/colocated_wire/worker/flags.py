"""Number types for the worker's flags, so that argparse refuses a bad value and names the flag."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    return _at_least(text, 1)


def non_negative(text: str) -> int:
    """An argparse type: an integer of at least 0."""
    return _at_least(text, 0)


def _at_least(text: str, minimum: int) -> int:
    value = int(text)  # argparse words a ValueError as "invalid ... value"
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    value = float(text)  # argparse words a ValueError as "invalid ... value"
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value
