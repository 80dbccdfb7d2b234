"""Why the worker refuses a call, as a gRPC status code and one clear message.

The servicer raises `Refused` wherever it decides; one place turns it into
the call's status, so every refusal reaches the client the same way.
"""

from __future__ import annotations

import grpc


class Refused(Exception):
    """A call the worker will not (or cannot) complete: a status code and a message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def invalid_argument(message: str) -> Refused:
    """The request itself is wrong: a bad payload, or input data that does not fit its spec."""
    return Refused(grpc.StatusCode.INVALID_ARGUMENT, message)


def permission_denied(message: str) -> Refused:
    """The worker was not told to allow what the program asks for."""
    return Refused(grpc.StatusCode.PERMISSION_DENIED, message)


def failed_precondition(message: str) -> Refused:
    """The request is well formed but does not fit this worker: versions, devices, names."""
    return Refused(grpc.StatusCode.FAILED_PRECONDITION, message)


def function_failed(message: str) -> Refused:
    """The program's own function raised or returned something that is not arrays."""
    return Refused(grpc.StatusCode.UNKNOWN, message)


def not_found(message: str) -> Refused:
    """A program handle this worker does not hold (never loaded, evicted, or lost in a restart)."""
    return Refused(grpc.StatusCode.NOT_FOUND, message)


def resource_exhausted(message: str) -> Refused:
    """The worker is at one of its limits; the call is refused at once instead of queued."""
    return Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


def unavailable(message: str) -> Refused:
    """The worker is shutting down and takes no new calls."""
    return Refused(grpc.StatusCode.UNAVAILABLE, message)


def cancelled(message: str) -> Refused:
    """The client cancelled the call or its deadline passed; the work stops here."""
    return Refused(grpc.StatusCode.CANCELLED, message)
