"""Session on an in-process server over a real channel, driven by a raw stream of bytes: many
calls on one stream, each answer one message when small and several when not, a refused call
answered by its status while the session goes on, cancels, limits, and a drain that ends the
session after its call.

A call is held inside the worker by worker_gate.hold until the test sets the gate's release;
every wait is for an event or a count, never for time.
"""

import contextlib
import os
import queue
import threading
from concurrent import futures

import grpc
import numpy as np
import pytest
import worker_gate
from test_worker import float_spec, program, request
from test_worker_drain import Worker, open_gate
from test_worker_sharded import X, Y, assemble, shards_of, spec, start

from colocated_wire import deserialize_specs, examples
from colocated_wire._gen.colocated.v1 import service_pb2, service_pb2_grpc
from colocated_wire.worker import metrics as worker_metrics
from colocated_wire.worker.device_turn import TURN
from colocated_wire.worker.limits import DEFAULT_MAX_SESSIONS, MAX_MESSAGE_BYTES, CallLimits
from colocated_wire.worker.main import CONTROL_THREADS, grpc_server
from colocated_wire.worker.metrics import PREFIX
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.requests import read_session_request
from colocated_wire.worker.responses import session_answer, session_status
from colocated_wire.worker.service import ColocatedWorker, handlers
from colocated_wire.worker.session import ANSWER_BYTES
from colocated_wire.worker.sharded import MAX_CHUNK_BYTES, OUTPUT_CHUNK_BYTES

SESSION = "/colocated.v1.ColocatedWorkerService/Session"
ALLOWED = frozenset({"colocated_wire.examples", "worker_gate"})
DEADLINE = 120  # seconds: only so that a bug fails the test instead of hanging it
# A unary call's, shorter than a session's: a call starved of threads by idle sessions fails
# the test before the sessions' deadlines end them and free a thread.
UNARY_DEADLINE = DEADLINE / 4
OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]  # as the worker's and the TypeScript client's
Code = grpc.StatusCode


@contextlib.contextmanager
def served(limits: CallLimits | None = None, max_sessions: int = DEFAULT_MAX_SESSIONS):
    """(the servicer, a channel to it), served in-process as the worker serves it: by the
    server worker/main.py makes, with as many threads."""
    limits = CallLimits() if limits is None else limits
    policy = WorkerPolicy(allowed_modules=ALLOWED)
    service = ColocatedWorker(policy, limits, max_sessions=max_sessions)
    server = grpc_server(limits.max_calls, max_sessions)
    server.add_generic_rpc_handlers((handlers(service),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as channel:
            yield service, channel
    finally:
        server.stop(grace=None)
    assert service.state.limits.wait_idle(DEADLINE), "a call held on to its slot"
    assert service.state.limits.bytes == 0
    assert service.state.sessions.wait_at_most(0, DEADLINE), "a session held on to its place"


class Session:
    """A raw Session stream: requests sent as bytes when the test says, responses read one
    message at a time."""

    def __init__(self, channel: grpc.Channel):
        self._requests: queue.Queue[bytes | None] = queue.Queue()
        method = channel.stream_stream(SESSION)  # bytes both ways
        self.stream = method(iter(self._requests.get, None), timeout=DEADLINE)

    def send(self, request: service_pb2.SessionRequest | bytes) -> None:
        self._requests.put(request if isinstance(request, bytes) else request.SerializeToString())

    def cancel(self, call_id: int) -> None:
        self.send(service_pb2.SessionRequest(cancel=call_id))

    def close(self) -> None:
        """Half-closes the stream: no more requests."""
        self._requests.put(None)

    last_specs = None  # the output specs this session's answers sent last
    received_bytes = 0  # of every message, as the worker sent it

    def receive(self) -> service_pb2.SessionResponse:
        """The next part, its output specs filled in when it says they are as before."""
        part = self.receive_raw()
        if part.output_specs_as_before:
            assert self.last_specs is not None, "specs as before, but none came before"
            part.output_specs.CopyFrom(self.last_specs)
            part.output_specs_as_before = False
        elif part.HasField("output_specs"):
            self.last_specs = type(part.output_specs)()
            self.last_specs.CopyFrom(part.output_specs)
        return part

    def receive_raw(self) -> service_pb2.SessionResponse:
        """The next part as the worker sent it."""
        message = next(self.stream)
        self.received_bytes += len(message)
        return service_pb2.SessionResponse.FromString(message)

    def answer(self, call_id: int) -> list[service_pb2.SessionResponse]:
        """Every part of the call's answer, up to its end or its status."""
        parts = []
        while True:
            part = self.receive()
            assert part.id == call_id, (part.id, call_id)
            parts.append(part)
            if part.end or part.HasField("status"):
                return parts

    def status(self, call_id: int) -> tuple[Code, str]:
        """The status the call's answer ends with (one part)."""
        [part] = self.answer(call_id)
        assert part.HasField("status") and not part.end and not part.outputs
        return code_of(part.status.code), part.status.message

    def ended(self) -> grpc.RpcError:
        """The error the stream ends with."""
        with pytest.raises(grpc.RpcError) as e:
            self.receive()
        return e.value


def code_of(number: int) -> Code:
    return next(c for c in Code if c.value[0] == number)


def call(call_id: int, begin: service_pb2.ExecuteStart, specs, values, **fields):
    """The SessionRequest of a call: each distinct shard of each input as one chunk."""
    req = service_pb2.SessionRequest()
    req.call.id = call_id
    req.call.start.CopyFrom(begin)
    for leaf, (s, value) in enumerate(zip(specs, values, strict=True)):
        for index, data in shards_of(s, value):
            add_chunk(req.call, leaf, index, data)
    for name, value in fields.items():
        setattr(req.call, name, value)
    return req


def add_chunk(session_call, leaf, index, data, offset=0, last=True):
    c = session_call.inputs.add(leaf=leaf, offset=offset, data=bytes(data), last=last)
    if index is not None:
        c.index.start.extend(a for a, _ in index)
        c.index.stop.extend(b for _, b in index)
        c.index.SetInParent()
    return c


def outputs_of(parts: list[service_pb2.SessionResponse]):
    """(output specs, output arrays) of an answer's parts, its chunks reassembled."""
    assert parts[0].HasField("output_specs") and parts[-1].end
    assert not any(p.HasField("output_specs") for p in parts[1:])
    assert not any(p.end for p in parts[:-1])
    _, leaves = deserialize_specs(parts[0].output_specs.SerializeToString())
    chunks = [c for p in parts for c in p.outputs]
    assert all(len(c.data) <= OUTPUT_CHUNK_BYTES for c in chunks)
    return leaves, assemble(leaves, chunks)


SUMMARY = ["count_positive", "doubled", "positive", "row_sums", "sum"]


def summary(parts) -> dict[str, np.ndarray]:
    _, outputs = outputs_of(parts)
    return dict(zip(SUMMARY, outputs, strict=True))


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def summarize_call(mesh, call_id: int, x=X, **fields):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    return call(call_id, start(examples.summarize, *specs).start, specs, [x, Y], **fields)


def hold_call(mesh, call_id: int):
    s = spec(mesh, "x", "y")
    return call(call_id, start(worker_gate.hold, s).start, [s], [X])


def test_get_version_says_the_worker_serves_sessions():
    with served() as (_, channel):
        got = service_pb2_grpc.ColocatedWorkerServiceStub(channel).GetVersion(
            service_pb2.GetVersionRequest(client=service_pb2.VersionRange())
        )
    assert got.sessions


def get_version(channel: grpc.Channel) -> service_pb2.GetVersionResponse:
    stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
    request = service_pb2.GetVersionRequest(client=service_pb2.VersionRange())
    return stub.GetVersion(request, timeout=UNARY_DEADLINE)


def execute(channel: grpc.Channel, mesh) -> service_pb2.ExecuteResponse:
    """A unary Execute of examples.total on X, its whole answer."""
    prog = program(examples.total, mesh, float_spec(mesh))
    stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
    return stub.Execute(request(prog, X), timeout=UNARY_DEADLINE)


def opened(channel: grpc.Channel, mesh) -> Session:
    """A session that has answered a call: open on the worker, holding a serving thread."""
    session = Session(channel)
    session.send(summarize_call(mesh, 1))
    np.testing.assert_array_equal(summary(session.answer(1))["doubled"], X * 2)
    return session


MAX_2 = "this worker serves at most 2 sessions at once (--max-sessions); call ExecuteSharded"


def test_a_session_beyond_max_sessions_is_refused_at_once_and_the_others_go_on(mesh):
    with served(max_sessions=2) as (service, channel):
        first, second = opened(channel, mesh), opened(channel, mesh)
        third = Session(channel)
        third.send(summarize_call(mesh, 1))
        refused = third.ended()  # no answer to its call comes first: the worker took none
        third.close()
        open_while_refused = len(service.state.sessions)
        # GetVersion and Execute answer while both sessions are open and idle.
        version = get_version(channel)
        executed = execute(channel, mesh)
        second.send(summarize_call(mesh, 2))
        again = second.answer(2)
        first.close()  # its place is free once the worker has ended the stream
        with pytest.raises(StopIteration):
            first.receive()
        after_close = opened(channel, mesh)
        second.stream.cancel()
        assert service.state.sessions.wait_at_most(1, DEADLINE)
        after_cancel = opened(channel, mesh)
        for session in (after_close, after_cancel):
            session.close()
    assert (refused.code(), refused.details()) == (Code.RESOURCE_EXHAUSTED, MAX_2)
    assert open_while_refused == 2
    assert version.sessions
    assert np.frombuffer(executed.outputs[0].data, np.float32)[0] == X.sum()
    np.testing.assert_array_equal(summary(again)["doubled"], X * 2)


def test_output_specs_are_sent_once_while_they_stay_the_same(mesh):
    with served() as (_, channel):
        session = Session(channel)
        kinds = []
        for call_id, make in enumerate(
            [summarize_call, summarize_call, affine_call, affine_call, summarize_call], start=1
        ):
            session.send(
                make(mesh, call_id) if make is summarize_call else make(mesh, call_id, 8)[0]
            )
            part = session.receive_raw()
            assert part.id == call_id and part.end
            kinds.append(
                "as before" if part.output_specs_as_before else part.HasField("output_specs")
            )
        session.close()
    # The second of two alike says so; another program's specs, and the first's again, are sent.
    assert kinds == [True, "as before", True, "as before", True]


def test_an_accepted_session_says_so_in_its_headers_before_any_call(mesh):
    with served(max_sessions=1) as (_, channel):
        session = Session(channel)
        session.stream.initial_metadata()  # returns when the headers come, or the stream ends
        open_without_a_call = session.stream.is_active()
        refused = Session(channel)  # the one place is taken: refused with no headers
        refused_end = refused.ended()
        refused.close()
        session.close()
    assert open_without_a_call
    assert refused_end.code() == Code.RESOURCE_EXHAUSTED


def test_a_session_that_fails_or_is_drained_gives_its_place_back(mesh, gate):
    with served(max_sessions=1) as (service, channel):
        broken = Session(channel)
        broken.send(b"")  # neither a call nor cancel: the session ends INVALID_ARGUMENT
        assert broken.ended().code() == Code.INVALID_ARGUMENT
        broken.close()
        busy = Session(channel)
        busy.send(hold_call(mesh, 1))
        assert gate.entered.acquire(timeout=DEADLINE)
        full = Session(channel)
        full_end = full.ended()
        full.close()
        with futures.ThreadPoolExecutor(1) as pool:
            drained = pool.submit(service.state.limits.drain, DEADLINE)
            gate.release.set()
            busy.answer(1)
            busy_end = busy.ended()
            assert drained.result()
        busy.close()
        places = service.state.sessions.wait_at_most(0, DEADLINE)
        late = Session(channel)  # during the drain: refused as a call is, whatever the places
        late_end = late.ended()
        late.close()
    assert (full_end.code(), full_end.details()) == (
        Code.RESOURCE_EXHAUSTED,
        "this worker serves at most 1 session at once (--max-sessions); call ExecuteSharded",
    )
    assert busy_end.code() == Code.UNAVAILABLE
    assert places
    assert (late_end.code(), late_end.details()) == (
        Code.UNAVAILABLE,
        "the worker is shutting down and takes no new calls",
    )


def test_idle_sessions_at_their_limit_leave_threads_for_every_other_call(mesh):
    # More sessions than the threads a server sized for the calls alone has beyond them
    # (--max-concurrent-calls + CONTROL_THREADS): without threads of their own they would take
    # every one, and GetVersion and Execute would wait without end.
    limits = CallLimits(max_calls=1)
    max_sessions = limits.max_calls + CONTROL_THREADS
    with served(limits, max_sessions) as (service, channel):
        sessions = [opened(channel, mesh) for _ in range(max_sessions)]
        open_sessions = len(service.state.sessions)
        version = get_version(channel)
        executed = execute(channel, mesh)
        beyond = Session(channel)
        refused = beyond.ended()
        beyond.close()
        sessions[0].send(summarize_call(mesh, 2))
        again = sessions[0].answer(2)
        for session in sessions:
            session.close()
    assert open_sessions == max_sessions
    assert version.sessions
    assert np.frombuffer(executed.outputs[0].data, np.float32)[0] == X.sum()
    assert refused.code() == Code.RESOURCE_EXHAUSTED
    np.testing.assert_array_equal(summary(again)["doubled"], X * 2)


def test_with_max_sessions_0_the_worker_serves_none(mesh):
    with served(max_sessions=0) as (_, channel):
        version = get_version(channel)
        session = Session(channel)
        session.send(summarize_call(mesh, 1))
        refused = session.ended()
        session.close()
        executed = execute(channel, mesh)
    assert not version.sessions
    assert (refused.code(), refused.details()) == (
        Code.UNIMPLEMENTED,
        "this worker serves no sessions (--max-sessions 0); call ExecuteSharded",
    )
    assert np.frombuffer(executed.outputs[0].data, np.float32)[0] == X.sum()


def test_many_calls_on_one_session_each_answered_in_one_message(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    by_payload = start(examples.summarize, *specs).start
    with served() as (service, channel):
        load = service_pb2.LoadProgramRequest(version=0, program=by_payload.program)
        handle = service_pb2_grpc.ColocatedWorkerServiceStub(channel).LoadProgram(load).handle
        by_handle = service_pb2.ExecuteStart(version=0, handle=handle)
        session = Session(channel)
        answers = []
        for k in range(4):
            x = X * (k + 1)
            session.send(call(10 + k, by_handle if k % 2 else by_payload, specs, [x, Y]))
            answers.append((x, session.answer(10 + k)))
        session.close()
        with pytest.raises(StopIteration):
            session.receive()
        assert len(service.state.sessions) == 0
    for x, parts in answers:
        assert len(parts) == 1  # a small answer is one message
        out = summary(parts)
        np.testing.assert_array_equal(out["doubled"], x * 2)
        np.testing.assert_array_equal(out["sum"], x + Y)
        assert out["count_positive"] == (x > 0).sum()


def test_calls_sent_before_a_half_close_are_all_answered_in_order(mesh):
    with served() as (_, channel):
        session = Session(channel)
        for k in range(3):
            session.send(summarize_call(mesh, k, x=X + k))
        session.close()
        answers = [session.answer(k) for k in range(3)]
        with pytest.raises(StopIteration):
            session.receive()
    for k, parts in enumerate(answers):
        np.testing.assert_array_equal(summary(parts)["doubled"], (X + k) * 2)


def affine_call(mesh, call_id: int, rows: int):
    """x (rows, 1) * 1 + shift (2048,): an output of rows * 8 KiB from inputs of a few KiB."""
    specs = [spec(mesh, "x", shape=(rows, 1)), spec(mesh, shape=()), spec(mesh, shape=(2048,))]
    x = np.arange(rows, dtype=np.float32).reshape(rows, 1)
    shift = np.arange(2048, dtype=np.float32)
    values = [x, np.float32(1), shift]
    return call(call_id, start(examples.affine, *specs).start, specs, values), x + shift


def test_an_output_of_4_mib_is_one_message_and_a_larger_one_comes_in_parts(mesh):
    with served() as (_, channel):
        session = Session(channel)
        exact, exact_want = affine_call(mesh, 1, 512)  # 4 MiB of output
        session.send(exact)
        exact_parts = session.answer(1)
        large, large_want = affine_call(mesh, 2, 1536)  # 12 MiB
        session.send(large)
        large_parts = session.answer(2)
        after, _ = affine_call(mesh, 3, 4)
        session.send(after)
        after_parts = session.answer(3)
    assert exact_want.nbytes == ANSWER_BYTES and len(exact_parts) == 1
    np.testing.assert_array_equal(outputs_of(exact_parts)[1][0], exact_want)
    assert len(large_parts) == 3
    assert all(sum(len(c.data) for c in p.outputs) <= ANSWER_BYTES for p in large_parts)
    np.testing.assert_array_equal(outputs_of(large_parts)[1][0], large_want)
    assert len(after_parts) == 1


def test_an_unknown_handle_is_not_found_and_the_next_call_runs(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    unknown = service_pb2.ExecuteStart(version=0)
    unknown.handle.digest = bytes(32)
    with served() as (_, channel):
        session = Session(channel)
        session.send(call(1, unknown, specs, [X, Y]))
        code, _ = session.status(1)
        session.send(summarize_call(mesh, 2))
        parts = session.answer(2)
    assert code == Code.NOT_FOUND
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def _bad_calls(mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    begin = start(examples.summarize, *specs).start
    good = summarize_call(mesh, 0).call
    a = ((0, 4), (0, 1))  # x's first shard: 4x1 float32, 16 bytes

    def with_chunks(*chunks, begin=begin):
        req = service_pb2.SessionRequest()
        if begin is not None:
            req.call.start.CopyFrom(begin)
        for c in chunks:
            add_chunk(req.call, *c)
        return req

    good_chunks = [
        (c.leaf, tuple(zip(c.index.start, c.index.stop, strict=True)), c.data) for c in good.inputs
    ]
    over = spec(mesh, shape=(MAX_CHUNK_BYTES // 4 + 1,))
    return [
        (
            with_chunks((0, a, b"\0" * 16, 0, False)),
            "inputs[0] shard [0:4,0:1]: not marked last (on a session, each shard is one chunk:"
            " its index, all its bytes, marked last)",
        ),
        (with_chunks((0, None, b"\0" * 16)), "inputs[0] chunk 1: carries no index"),
        (
            with_chunks((0, a, b"\0" * 16, 4)),
            "inputs[0] shard [0:4,0:1]: its first chunk is at offset 4, not 0",
        ),
        (with_chunks((0, ((0, 4), (0, 2)), b"\0" * 32)), "inputs[0] shard [0:4,0:2]: not a shard"),
        (with_chunks((2, a, b"")), "chunk 1: leaf 2, but the program has 2 input leaves"),
        (
            with_chunks(*good_chunks[:9]),
            "inputs[1] shard [4:8,0:4]: never sent (1 of the leaf's 2 shards arrived)",
        ),
        (with_chunks(*good_chunks, begin=None), "start: the call carries no `start`"),
        (
            call(0, start(examples.total, over).start, [over], [np.zeros(over.shape, np.float32)]),
            f"inputs: {MAX_CHUNK_BYTES + 4} bytes in all, over the worker's limit of"
            f" {MAX_CHUNK_BYTES} bytes for a call on a session; send larger inputs by"
            " ExecuteSharded",
        ),
    ]


def test_a_bad_call_is_invalid_argument_naming_where_and_the_session_goes_on(mesh):
    bad = _bad_calls(mesh)
    with served() as (_, channel):
        session = Session(channel)
        got = []
        for k, (req, _) in enumerate(bad, start=1):
            req.call.id = k
            session.send(req)
            got.append(session.status(k))
        session.send(summarize_call(mesh, len(bad) + 1))
        parts = session.answer(len(bad) + 1)
    for (code, message), (_, text) in zip(got, bad, strict=True):
        assert code == Code.INVALID_ARGUMENT, message
        assert message.startswith(text), (message, text)
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_call_id_must_be_above_the_last_one(mesh):
    with served() as (_, channel):
        session = Session(channel)
        session.send(summarize_call(mesh, 5))
        session.answer(5)
        session.send(summarize_call(mesh, 5))
        again = session.status(5)
        session.send(summarize_call(mesh, 3))
        smaller = session.status(3)
        session.send(summarize_call(mesh, 6))
        parts = session.answer(6)
    assert again == (
        Code.INVALID_ARGUMENT,
        "call 5: its id is not above the session's previous call 5 (a session's call ids"
        " increase and are never reused)",
    )
    assert smaller[0] == Code.INVALID_ARGUMENT
    assert smaller[1].startswith("call 3: its id is not above the session's previous call 5")
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_request_that_is_no_message_refuses_its_call_or_ends_the_session(mesh):
    # A call of id 7 whose `start` (field 2) is a varint: the wrong wire type.
    broken_call = b"\x0a\x04\x08\x07\x10\x01"
    with served() as (_, channel):
        session = Session(channel)
        session.send(broken_call)
        refused = session.status(7)
        session.send(summarize_call(mesh, 8))
        parts = session.answer(8)
        session.send(b"\x0a\xff")  # a call that runs past the end, no id to answer
        ended = session.ended()
        nothing = Session(channel)
        nothing.send(b"")
        empty = nothing.ended()
    assert refused == (
        Code.INVALID_ARGUMENT,
        "request 1: not a valid protobuf message (field 2 has the wrong wire type)",
    )
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)
    assert ended.code() == Code.INVALID_ARGUMENT
    assert ended.details().startswith("request 3: not a valid protobuf message (")
    assert (empty.code(), empty.details()) == (
        Code.INVALID_ARGUMENT,
        "request 1: neither a call nor cancel",
    )


def test_a_cancelled_call_is_cancelled_once_its_function_returns_and_the_next_runs(
    mesh, gate, cancels
):
    with served() as (_, channel):
        session = Session(channel)
        session.send(hold_call(mesh, 1))
        assert gate.entered.acquire(timeout=DEADLINE)
        session.cancel(99)  # no such call: nothing happens
        session.cancel(1)
        assert cancels.acquire(timeout=DEADLINE)
        gate.release.set()
        code, message = session.status(1)
        session.send(summarize_call(mesh, 2))
        parts = session.answer(2)
    assert code == Code.CANCELLED
    assert message == "the call was cancelled or passed its deadline before sending its outputs"
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_call_waiting_for_the_devices_turn_stops_at_once_when_cancelled(mesh, gate):
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    with served() as (_, channel):
        stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
        held = stub.Execute.future(hold)  # holds the devices' turn
        assert gate.entered.acquire(timeout=DEADLINE)
        session = Session(channel)
        session.send(summarize_call(mesh, 1))
        assert TURN.wait_for_waiting(1, DEADLINE)
        session.cancel(1)
        cancelled = session.status(1)  # while the turn is still held
        session.send(summarize_call(mesh, 2, timeout_ms=1))
        late = session.status(2)  # its own deadline passes while it waits
        gate.release.set()
        held.result()
        session.send(summarize_call(mesh, 3))
        parts = session.answer(3)
    assert cancelled[0] == Code.CANCELLED
    assert cancelled[1].startswith("the call was cancelled or passed its deadline while it waited")
    assert late[0] == Code.DEADLINE_EXCEEDED
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_call_queued_behind_a_running_one_can_be_cancelled_before_it_runs(mesh, gate, cancels):
    with served() as (_, channel):
        session = Session(channel)
        session.send(hold_call(mesh, 1))
        assert gate.entered.acquire(timeout=DEADLINE)
        session.send(summarize_call(mesh, 2))
        session.cancel(2)
        assert cancels.acquire(timeout=DEADLINE)
        session.send(summarize_call(mesh, 3))
        gate.release.set()
        first = session.answer(1)
        second = session.status(2)
        third = session.answer(3)
    np.testing.assert_array_equal(outputs_of(first)[1][0], X)
    assert second == (Code.CANCELLED, "the client cancelled the call before it ran")
    np.testing.assert_array_equal(summary(third)["doubled"], X * 2)


def test_a_call_beyond_the_limit_is_resource_exhausted_and_the_session_goes_on(mesh, gate):
    hold = request(program(worker_gate.hold, mesh, float_spec(mesh)), X)
    with served(CallLimits(max_calls=1)) as (_, channel):
        stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
        held = stub.Execute.future(hold)  # holds the one slot
        assert gate.entered.acquire(timeout=DEADLINE)
        session = Session(channel)
        session.send(summarize_call(mesh, 1))
        refused = session.status(1)
        gate.release.set()
        held.result()
        session.send(summarize_call(mesh, 2))
        parts = session.answer(2)
    assert refused[0] == Code.RESOURCE_EXHAUSTED
    assert "--max-concurrent-calls" in refused[1]
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_client_that_cancels_the_stream_stops_its_call_and_frees_the_slot(mesh, gate):
    with served() as (service, channel):
        session = Session(channel)
        session.send(hold_call(mesh, 1))
        assert gate.entered.acquire(timeout=DEADLINE)
        session.stream.cancel()
        assert session.ended().code() == Code.CANCELLED
        gate.release.set()
        assert service.state.limits.wait_idle(DEADLINE)
        again = Session(channel)
        again.send(summarize_call(mesh, 1))
        parts = again.answer(1)
    np.testing.assert_array_equal(summary(parts)["doubled"], X * 2)


def test_a_drain_ends_an_idle_session_at_once_and_a_busy_one_after_its_call(mesh, gate):
    with served() as (service, channel):
        idle, busy = Session(channel), Session(channel)
        idle.send(summarize_call(mesh, 1))
        idle.answer(1)
        busy.send(hold_call(mesh, 1))
        assert gate.entered.acquire(timeout=DEADLINE)
        began = threading.Event()
        service.state.limits.on_drain(began.set)
        with futures.ThreadPoolExecutor(1) as pool:
            drained = pool.submit(service.state.limits.drain, DEADLINE)
            assert began.wait(DEADLINE)
            idle_end = idle.ended()  # while the busy session's call still runs
            still_draining = not drained.done()
            gate.release.set()
            answered = busy.answer(1)
            busy_end = busy.ended()
            assert drained.result()
        late = Session(channel)  # opened during the drain
        late.send(summarize_call(mesh, 1))
        late_parts = []  # the call's refusal, if the worker read it before the session ended
        with pytest.raises(grpc.RpcError) as late_end:
            while True:
                late_parts.append(late.receive())
        readers = [t for t in threading.enumerate() if t.name == "colocated-wire-session"]
        for reader in readers:  # each session's reader ends with its stream
            reader.join(DEADLINE)
        assert not any(t.is_alive() for t in readers)
    assert (idle_end.code(), idle_end.details()) == (
        Code.UNAVAILABLE,
        "the worker is shutting down and takes no new calls",
    )
    assert still_draining
    np.testing.assert_array_equal(outputs_of(answered)[1][0], X)
    assert busy_end.code() == Code.UNAVAILABLE
    assert late_end.value.code() == Code.UNAVAILABLE
    assert all(code_of(p.status.code) == Code.UNAVAILABLE for p in late_parts)


def test_with_metrics_on_each_call_of_a_session_is_counted_and_the_stream_once(mesh, monkeypatch):
    monkeypatch.setattr(worker_metrics, "_serving", True)  # as serve() leaves it
    monkeypatch.setattr(worker_metrics, "_session_calls", None)

    def sample(name: str, **labels: str) -> float:
        return worker_metrics.REGISTRY.get_sample_value(PREFIX + name, labels) or 0.0

    def counts() -> list[float]:
        return [
            sample("calls_total", method="Session", code="OK"),
            sample("calls_total", method="SessionCall", code="OK"),
            sample("calls_total", method="SessionCall", code="NOT_FOUND"),
            sample("call_duration_seconds_count", method="SessionCall"),
            sample("request_bytes_total", method="Session"),
            sample("response_bytes_total", method="Session"),
        ]

    unknown = service_pb2.ExecuteStart(version=0)
    unknown.handle.digest = bytes(32)
    specs = [spec(mesh, "x", "y"), spec(mesh, "x")]
    requests = [summarize_call(mesh, 0), call(1, unknown, specs, [X, Y]), summarize_call(mesh, 2)]
    before = counts()
    with served() as (_, channel):
        session = Session(channel)
        answers = []
        for k, req in enumerate(requests):
            session.send(req)
            answers.append(session.answer(k))
        session.close()
        with pytest.raises(StopIteration):
            session.receive()
    sent = sum(r.ByteSize() for r in requests)
    grew = [b - a for a, b in zip(before, counts(), strict=True)]
    assert grew == [1, 2, 1, 3, sent, session.received_bytes]
    assert [code_of(p.status.code) for p in answers[1]] == [Code.NOT_FOUND]
    assert answers[0][-1].end and answers[2][-1].end


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "gate"
    os.mkfifo(path)
    return path


def test_sigterm_lets_a_sessions_call_finish_then_ends_it_and_exits_without_the_grace(fifo, mesh):
    worker = Worker(fifo, "--grace-period", "600")  # an idle session must not hold the exit
    try:
        with grpc.insecure_channel(worker.target, options=OPTIONS) as channel:
            idle, busy = Session(channel), Session(channel)
            idle.send(summarize_call(mesh, 1))
            refused = idle.status(1)  # the worker allows worker_gate alone
            busy.send(hold_call(mesh, 1))
            worker.wait_for("worker_gate: holding")
            worker.process.terminate()
            worker.wait_for("colocated_wire.worker: draining")
            idle_end = idle.ended()
            open_gate(fifo)
            answered = busy.answer(1)
            end = busy.ended()
        code = worker.process.wait(timeout=DEADLINE)
    finally:
        worker.process.kill()
    assert refused[0] == Code.PERMISSION_DENIED
    assert idle_end.code() == Code.UNAVAILABLE
    np.testing.assert_array_equal(outputs_of(answered)[1][0], X)
    assert end.code() == Code.UNAVAILABLE
    assert code == 0, worker.stderr()


def test_the_worker_takes_max_sessions_from_its_flag(fifo, mesh):
    worker = Worker(fifo, "--max-sessions", "1")
    try:
        with grpc.insecure_channel(worker.target, options=OPTIONS) as channel:
            first = Session(channel)
            first.send(summarize_call(mesh, 1))
            answered = first.status(1)  # the worker allows worker_gate alone
            second = Session(channel)
            second_end = second.ended()
            second.close()
            first.close()
            with pytest.raises(StopIteration):
                first.receive()
            version = get_version(channel)
        worker.process.terminate()
        code = worker.process.wait(timeout=DEADLINE)
    finally:
        worker.process.kill()
    assert answered[0] == Code.PERMISSION_DENIED
    assert (second_end.code(), second_end.details()) == (
        Code.RESOURCE_EXHAUSTED,
        "this worker serves at most 1 session at once (--max-sessions); call ExecuteSharded",
    )
    assert version.sessions
    assert code == 0, worker.stderr()


# The bytes written and read by hand are protobuf's.


@pytest.mark.parametrize("call_id", [0, 1, 2**40])
@pytest.mark.parametrize("specs", [None, b"", b"\x0a\x02\x08\x01"])
@pytest.mark.parametrize("end", [False, True])
def test_session_answers_are_protobufs(call_id, specs, end):
    chunks = [(0, ((0, 4), (2, 300)), 0, b"abc", True), (3, None, 1 << 20, b"", False)]
    want = service_pb2.SessionResponse(id=call_id, end=end)
    if specs is not None:
        want.output_specs.MergeFromString(specs)
        want.output_specs.SetInParent()
    for leaf, index, offset, data, last in chunks:
        c = want.outputs.add(leaf=leaf, offset=offset, data=data, last=last)
        if index is not None:
            c.index.start.extend(a for a, _ in index)
            c.index.stop.extend(b for _, b in index)
    views = [(*c[:3], memoryview(np.frombuffer(c[3], np.uint8)), c[4]) for c in chunks]
    assert session_answer(call_id, specs, views, end) == want.SerializeToString()


@pytest.mark.parametrize("call_id", [0, 9])
@pytest.mark.parametrize(("code", "message"), [(0, ""), (5, "no such handle"), (13, "é")])
def test_session_statuses_are_protobufs(call_id, code, message):
    want = service_pb2.SessionResponse(id=call_id)
    want.status.code = code
    want.status.message = message
    want.status.SetInParent()
    assert session_status(call_id, code, message) == want.SerializeToString()


def test_session_requests_are_read_as_protobuf_wrote_them(mesh):
    req = summarize_call(mesh, 2**33, timeout_ms=250, job_call_id="step-7")
    got = read_session_request(req.SerializeToString())
    assert got.part == "call"
    c = got.call
    assert (c.id, c.timeout_ms, c.job_call_id) == (2**33, 250, "step-7")
    assert c.start == req.call.start
    assert [(i.leaf, i.index, i.offset, bytes(i.data), i.last) for i in c.inputs] == [
        (i.leaf, (list(i.index.start), list(i.index.stop)), i.offset, i.data, i.last)
        for i in req.call.inputs
    ]
    assert c.input_bytes == sum(len(i.data) for i in req.call.inputs)
    cancel = read_session_request(service_pb2.SessionRequest(cancel=5).SerializeToString())
    assert (cancel.part, cancel.cancel) == ("cancel", 5)
    assert read_session_request(b"").part is None
    bad = read_session_request(b"\x0a\x03\x08\x2a\xff")
    assert (bad.part, bad.call_id) == ("invalid", 42)
    assert read_session_request(b"\x0a\x02\x08").call_id is None
