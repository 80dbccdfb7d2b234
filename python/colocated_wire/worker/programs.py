"""Programs lifted once and kept: a bounded LRU keyed by the SHA-256 of the payload's bytes.

A training loop calls one program thousands of times; LoadProgram lifts it
once and returns its handle, and Execute names the handle. A handle this
worker does not hold (never loaded, evicted, or loaded before a restart) is
NOT_FOUND, and the client loads the program again. A call that carries the
whole payload is looked up by the same digest, so it too is lifted once.
With --explain, a program lifted while others of its function are cached
says on stderr how it differs from the nearest of them (explain.py).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import threading

from colocated_wire.decode import Program, deserialize_program
from colocated_wire.errors import DecodeError, FunctionNotAllowedError, LiftError
from colocated_wire.functions import UnloadedFunction, name_of
from colocated_wire.payload.writer import Writer, payload_writer
from colocated_wire.worker import metrics
from colocated_wire.worker.arrays import direct_puts
from colocated_wire.worker.errors import (
    failed_precondition,
    invalid_argument,
    not_found,
    permission_denied,
)
from colocated_wire.worker.explain import same_function, say_miss
from colocated_wire.worker.inputs import InputCheck, input_check
from colocated_wire.worker.placement import DirectPut
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.requests import header_minor_version

DEFAULT_CAPACITY = 64


@dataclasses.dataclass(frozen=True)
class LoadedProgram:
    """A lifted program, the digest that names it, and what checks its inputs."""

    digest: bytes
    program: Program
    name: str
    minor_version: int
    inputs: InputCheck
    writer: Writer | None  # who wrote its payload (1.3), shown by --explain
    direct: tuple[DirectPut, ...] | None  # how its inputs go to their devices (arrays.direct_puts)


class ProgramCache:
    """The `capacity` most recently used programs, lifted as `policy` allows."""

    def __init__(
        self, policy: WorkerPolicy, capacity: int = DEFAULT_CAPACITY, explain: bool = False
    ):
        if capacity < 1:
            raise ValueError(f"the program cache holds at least 1 program, not {capacity}")
        self.policy = policy
        self.capacity = capacity
        self.explain = explain  # a miss while the function has programs here says why (--explain)
        self._programs: collections.OrderedDict[bytes, LoadedProgram] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._programs)

    def load(self, data: bytes | memoryview, version: int) -> LoadedProgram:
        """The program of these payload bytes, lifted now or found by digest; raises Refused."""
        digest = hashlib.sha256(data).digest()
        with self._lock:
            found = self._programs.get(digest)
            if found is not None:
                self._programs.move_to_end(digest)
        metrics.program_lookup(found is not None)
        if found is None:
            found = lift(digest, bytes(data), version, self.policy)
            with self._lock:
                cached = self._programs.values()
                earlier = same_function(found, cached) if self.explain else []
                self._programs[digest] = found
                while len(self._programs) > self.capacity:
                    self._programs.popitem(last=False)
                    metrics.PROGRAM_CACHE_EVICTIONS.inc()
            if earlier:
                say_miss(found, earlier, self.policy.allow_pickle)
        return within(found, version)

    def get(self, digest: bytes, version: int) -> LoadedProgram:
        """The loaded program of this handle; NOT_FOUND when this worker does not hold it."""
        with self._lock:
            found = self._programs.get(digest)
            if found is not None:
                self._programs.move_to_end(digest)
        metrics.program_lookup(found is not None)
        if found is None:
            raise not_found(
                f"program handle {digest.hex()[:16]}… is not loaded on this worker (never loaded,"
                f" evicted from its {self.capacity} most recent programs, or loaded before a"
                " restart): call LoadProgram again"
            )
        return within(found, version)


def within(loaded: LoadedProgram, version: int) -> LoadedProgram:
    """The program, if its payload is no newer than the call's version."""
    if loaded.minor_version > version:
        raise invalid_argument(
            f"program payload refused: header.minor_version: minor version"
            f" {loaded.minor_version} is newer than the agreed {version}"
        )
    return loaded


def lift(digest: bytes, data: bytes, version: int, policy: WorkerPolicy) -> LoadedProgram:
    """The payload decoded no newer than `version`; the function admitted by the policy."""
    try:
        program = deserialize_program(
            data,
            allow_pickle=policy.allow_pickle,
            allowed_modules=policy.allowed_modules,
            allowed_functions=policy.allowed_functions,
            max_minor_version=version,
        )
    except DecodeError as e:
        raise invalid_argument(f"program payload refused: {e}") from e
    except FunctionNotAllowedError as e:
        raise permission_denied(
            f"function {e.module}.{e.qualname}: module {e.module!r} is not allowed on this worker"
            f" (--allow-module, --allow-function; allowed: {policy.describe_allowed()})"
        ) from e
    except LiftError as e:
        raise failed_precondition(f"the program cannot run on this worker: {e}") from e
    except Exception as e:  # noqa: BLE001 - unpickling can raise anything
        raise invalid_argument(f"the program cannot be loaded: {type(e).__name__}: {e}") from e
    fun = program.fun
    if isinstance(fun, UnloadedFunction):
        if fun.pickle:
            raise permission_denied(
                "the program's function is pickled, and this worker runs pickled functions"
                " only when started with --allow-pickle"
            )
        if fun.unknown:
            raise invalid_argument(
                "function: the program has no function of a kind this worker knows"
            )
        raise failed_precondition(f"the function was not loaded: {fun.reason}")
    named = name_of(fun)
    name = f"{named[0]}.{named[1]}" if named else "the pickled function"
    minor, checks = header_minor_version(data), input_check(program)
    direct = direct_puts(program.in_leaves, program.devices)
    return LoadedProgram(digest, program, name, minor, checks, payload_writer(data), direct)
