"""What every method of the worker shares, whichever serves a call: its policy, its limits,
its programs, its progress, its sessions' places and whether it relays. One object, made
once by the servicer (worker/service.py) and handed to each stream's code, so that a module
that serves a method names exactly what it may use."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from colocated_wire.worker.limits import CallLimits, Sessions
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.programs import ProgramCache
from colocated_wire.worker.progress import Progress


@dataclass
class WorkerState:
    """The worker's shared state: every field outlives the calls that use it."""

    policy: WorkerPolicy
    limits: CallLimits
    programs: ProgramCache
    progress: Progress
    sessions: Sessions
    # Whether it serves Relay (a worker with --max-sessions 0 does not).
    relays: bool
    # A worker serving TLS relays only with credentials for the others (worker/tls.py).
    relay_credentials: grpc.ChannelCredentials | None
