"""What every method of the worker shares, whichever serves a call: its policy, its limits,
its programs, its progress, its sessions' places and whether it relays. One object, made
once by the servicer (worker/service.py) and handed to each stream's code, so that a module
that serves a method names exactly what it may use."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from colocated_wire.worker.limits import DEFAULT_MAX_SESSIONS, CallLimits, Sessions
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

    @classmethod
    def make(
        cls,
        policy: WorkerPolicy,
        limits: CallLimits | None = None,
        programs: ProgramCache | None = None,
        progress: Progress | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        relays: bool = True,
        relay_credentials: grpc.ChannelCredentials | None = None,
    ) -> WorkerState:
        """The state of a worker of this policy, with defaults for whatever is not given."""
        state = cls(
            policy=policy,
            limits=CallLimits() if limits is None else limits,
            programs=ProgramCache(policy) if programs is None else programs,
            progress=Progress() if progress is None else progress,
            sessions=Sessions(max_sessions),
            relays=relays and max_sessions > 0,
            relay_credentials=relay_credentials,
        )
        # A drain ends each session after its current call: an idle one must not hold it up.
        state.limits.on_drain(state.sessions.drain)
        return state
