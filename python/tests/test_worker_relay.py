"""Relay on in-process servers over real channels: a relay stream carrying sessions to two
children (the relaying worker itself and another), their answers forwarded as written, a child
whose session ends and a later session of it, a child nobody serves, a child that is not of the
relay's job (sent nothing but GetTopology), cancels passed through, bad requests named, and the
relay's end after a half-close and in a drain.

Every wait is for an event or a count, never for time.
"""

import contextlib
import queue
import threading
from concurrent import futures
from pathlib import Path

import grpc
import jax
import numpy as np
import pytest
from test_worker_session import (
    DEADLINE,
    OPTIONS,
    SUMMARY,
    Session,
    X,
    code_of,
    get_version,
    hold_call,
    outputs_of,
    summarize_call,
)
from test_worker_tls import client_credentials

from colocated_wire._gen.colocated.v1 import service_pb2
from colocated_wire.worker import topology
from colocated_wire.worker.limits import DEFAULT_MAX_SESSIONS, CallLimits
from colocated_wire.worker.main import grpc_server
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.relay import serve as serve_relay
from colocated_wire.worker.service import ColocatedWorker, handlers
from colocated_wire.worker.session import serve as serve_session
from colocated_wire.worker.tls import TlsFiles, add_port, server_credentials

RELAY = "/colocated.v1.ColocatedWorkerService/Relay"
DEVICES = jax.device_count()
ALLOWED = frozenset({"colocated_wire.examples", "worker_gate"})
Code = grpc.StatusCode


@contextlib.contextmanager
def worker(
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    relays: bool = True,
    tls: grpc.ServerCredentials | None = None,
    relay_credentials: grpc.ChannelCredentials | None = None,
):
    """(the servicer, its target), served in-process as worker/main.py serves it."""
    limits = CallLimits()
    policy = WorkerPolicy(allowed_modules=ALLOWED)
    service = ColocatedWorker(
        policy, limits, None, None, max_sessions, relays, relay_credentials=relay_credentials
    )
    server = grpc_server(limits.max_calls, max_sessions)
    server.add_generic_rpc_handlers((handlers(service),))
    port = add_port(server, "127.0.0.1:0", tls)
    server.start()
    try:
        yield service, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)
    assert service.state.limits.wait_idle(DEADLINE), "a call held on to its slot"
    held = "a session or relay held on to its place"
    assert service.state.sessions.wait_at_most(0, DEADLINE), held


class Relay:
    """A raw Relay stream: requests sent when the test says, each child's answers and ends
    kept apart as they arrive."""

    def __init__(self, channel: grpc.Channel):
        self._requests: queue.Queue[bytes | None] = queue.Queue()
        self.stream = channel.stream_stream(RELAY)(iter(self._requests.get, None), timeout=DEADLINE)
        self.messages: dict[int, list[service_pb2.SessionResponse]] = {}
        self.ends: dict[int, list[service_pb2.RelayedEnd]] = {}
        self.taken: dict[int, list[int]] = {}  # each child's sessions its worker took
        self.sessions: dict[int, set[int]] = {}  # each child's sessions its messages named
        self.as_before: dict[int, list[bool]] = {}  # whether each part said its specs were
        self._specs: dict[int, service_pb2.SpecsPayload] = {}  # each child's last specs

    def send(self, children=(), messages=()) -> None:
        """Children as (index, target); messages as (child, session, SessionRequest)."""
        request = service_pb2.RelayRequest()
        for child, target in children:
            request.children.add(child=child, target=target)
        for child, session, message in messages:
            data = message if isinstance(message, bytes) else message.SerializeToString()
            request.messages.add(child=child, session=session, message=data)
        self._requests.put(request.SerializeToString())

    def close(self) -> None:
        self._requests.put(None)

    def receive(self) -> None:
        """Reads one RelayResponse into `messages` and `ends`."""
        response = service_pb2.RelayResponse.FromString(next(self.stream))
        for m in response.messages:
            part = service_pb2.SessionResponse.FromString(m.message)
            self.as_before.setdefault(m.child, []).append(part.output_specs_as_before)
            if part.output_specs_as_before:
                part.output_specs.CopyFrom(self._specs[m.child])
            elif part.HasField("output_specs"):
                self._specs[m.child] = part.output_specs
            self.messages.setdefault(m.child, []).append(part)
            self.sessions.setdefault(m.child, set()).add(m.session)
        for end in response.ends:
            self.ends.setdefault(end.child, []).append(end)
        for taken in response.taken:
            self.taken.setdefault(taken.child, []).append(taken.session)

    def answer(self, child: int, call_id: int) -> list[service_pb2.SessionResponse]:
        """Child's answer to a call, all its parts, reading until it has come."""
        while True:
            parts = [p for p in self.messages.get(child, []) if p.id == call_id]
            if parts and (parts[-1].end or parts[-1].HasField("status")):
                return parts
            self.receive()

    def end(self, child: int) -> service_pb2.RelayedEnd:
        """The end of the child's latest session, reading until it has come."""
        while not self.ends.get(child):
            self.receive()
        return self.ends[child][-1]

    def finish(self) -> None:
        """Half-closes the stream and reads what is left, up to its end (OK)."""
        self.close()
        with pytest.raises(StopIteration):
            while True:
                self.receive()

    def ended(self) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as e:
            while True:
                self.receive()
        return e.value


def doubled(parts) -> np.ndarray:
    _, outputs = outputs_of(parts)
    return dict(zip(SUMMARY, outputs, strict=True))["doubled"]


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def test_get_version_says_the_worker_serves_relays_and_not_without_sessions():
    with worker() as (_, target), grpc.insecure_channel(target) as channel:
        serving = get_version(channel).relays
    with worker(max_sessions=0) as (_, target), grpc.insecure_channel(target) as channel:
        without_sessions = get_version(channel).relays
        relay = Relay(channel)
        refused = relay.ended()
        relay.close()
    with worker(relays=False) as (_, target), grpc.insecure_channel(target) as channel:
        off = get_version(channel).relays
    assert (serving, without_sessions, off) == (True, False, False)
    assert (refused.code(), refused.details()) == (
        Code.UNIMPLEMENTED,
        "this worker serves no relays",
    )


def test_calls_to_two_children_are_forwarded_and_answered_as_written(mesh):
    with worker() as (relaying, near), worker() as (other, far):
        with grpc.insecure_channel(near, options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(0, near), (7, far)])
            for call_id in (1, 2):
                x = X + call_id
                relay.send(
                    messages=[
                        (0, 0, summarize_call(mesh, call_id, x=x)),
                        (7, 0, summarize_call(mesh, call_id, x=-x)),
                    ]
                )
                near_parts, far_parts = relay.answer(0, call_id), relay.answer(7, call_id)
                np.testing.assert_array_equal(doubled(near_parts), x * 2)
                np.testing.assert_array_equal(doubled(far_parts), -x * 2)
            # The second answers say their specs are as before: each child keeps its own session.
            open_while_relaying = (len(relaying.state.sessions), len(other.state.sessions))
            relay.finish()
    assert relay.as_before == {0: [False, True], 7: [False, True]}
    assert open_while_relaying == (2, 1)  # the relay and its session to itself; one
    assert relay.sessions == {0: {0}, 7: {0}}
    assert [e.status.code for c in (0, 7) for e in relay.ends[c]] == [0, 0]


def test_each_childs_first_session_opens_as_it_is_given_taken_or_refused(mesh):
    with worker() as (_, near), worker(max_sessions=1) as (_, full):
        with grpc.insecure_channel(full) as channel:
            holder = Session(channel)  # takes the one place
            holder.send(summarize_call(mesh, 1))
            holder.answer(1)
            with grpc.insecure_channel(near, options=OPTIONS) as relay_channel:
                relay = Relay(relay_channel)
                relay.send(children=[(0, near), (1, full)])
                refused = relay.end(1)  # before any message to it
                while 0 not in relay.taken:
                    relay.receive()
                relay.send(messages=[(0, 0, summarize_call(mesh, 1))])
                answered = relay.answer(0, 1)
                relay.finish()
            holder.close()
    assert relay.taken == {0: [0]}
    assert (refused.session, code_of(refused.status.code)) == (0, Code.RESOURCE_EXHAUSTED)
    assert "--max-sessions" in refused.status.message
    np.testing.assert_array_equal(doubled(answered), X * 2)


def answered_and_ended(near: str, other: str, mesh) -> tuple[list, service_pb2.RelayedEnd]:
    """A call relayed by `near` to itself (child 0) and to `other` (child 1), whose session
    ends: child 0's answer, and the end of child 1's session, which answered nothing."""
    with grpc.insecure_channel(near, options=OPTIONS) as channel:
        relay = Relay(channel)
        relay.send(children=[(0, near), (1, other)])
        relay.send(messages=[(1, 0, summarize_call(mesh, 1)), (0, 0, summarize_call(mesh, 1))])
        answered = relay.answer(0, 1)
        ended = relay.end(1)
        relay.finish()
    assert 1 not in relay.taken and 1 not in relay.messages
    return answered, ended


def test_a_child_nobody_serves_ends_unavailable_and_the_others_go_on(mesh):
    with worker() as (_, near), worker() as (_, spare):
        with grpc.insecure_channel(spare) as probe:
            get_version(probe)
        # A port that was served and is not now: nothing listens on it.
        with worker() as (_, gone):
            pass
        answered, unreachable = answered_and_ended(near, gone, mesh)
    np.testing.assert_array_equal(doubled(answered), X * 2)
    assert (unreachable.child, unreachable.session) == (1, 0)
    assert code_of(unreachable.status.code) == Code.UNAVAILABLE


@contextlib.contextmanager
def other_job(answer: service_pb2.GetTopologyResponse | None, hold: threading.Event | None = None):
    """(a gRPC server that answers GetTopology with `answer`, or with UNIMPLEMENTED, and serves
    nothing else; the methods it was called with; an event set once it is answering one).
    Given `hold`, it answers only once `hold` is set."""
    called: list[str] = []
    answering = threading.Event()

    def handle(request, context):
        answering.set()
        if hold is not None:
            hold.wait()
        if answer is None:
            context.abort(Code.UNIMPLEMENTED, "no such method")
        return answer.SerializeToString()

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            called.append(details.method)
            return grpc.unary_unary_rpc_method_handler(handle)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", called, answering
    finally:
        if hold is not None:
            hold.set()
        server.stop(grace=None)


def a_job_of(processes: int) -> service_pb2.GetTopologyResponse:
    answer = service_pb2.GetTopologyResponse(process_count=processes, process_index=1)
    for i in range(processes):
        answer.devices.add(id=i, process_index=i, platform="cpu", kind="cpu")
    return answer


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (a_job_of(2), "it is in a job of 2 processes, this worker in one of 1"),
        (None, "did not answer GetTopology: UNIMPLEMENTED: no such method"),
    ],
    ids=["another-job", "no-worker"],
)
def test_a_child_not_of_the_relays_job_gets_nothing_forwarded(mesh, answer, problem):
    with worker() as (_, near), other_job(answer) as (stranger, called, _):
        answered, refused = answered_and_ended(near, stranger, mesh)
    np.testing.assert_array_equal(doubled(answered), X * 2)
    assert (refused.session, code_of(refused.status.code)) == (0, Code.FAILED_PRECONDITION)
    assert stranger in refused.status.message
    assert refused.status.message.endswith(problem)
    assert called == ["/colocated.v1.ColocatedWorkerService/GetTopology"]


def test_a_half_close_ends_a_childs_session_while_its_check_waits(mesh):
    hold = threading.Event()
    with worker() as (_, near), other_job(None, hold) as (silent, called, answering):
        with grpc.insecure_channel(near, options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(0, near), (1, silent)])
            relay.send(messages=[(1, 0, summarize_call(mesh, 1)), (0, 0, summarize_call(mesh, 1))])
            answered = relay.answer(0, 1)
            assert answering.wait(DEADLINE)
            relay.finish()  # ends OK although child 1's GetTopology has not answered
    np.testing.assert_array_equal(doubled(answered), X * 2)
    [end] = relay.ends[1]
    assert (end.session, code_of(end.status.code)) == (0, Code.CANCELLED)
    assert 1 not in relay.taken and called == ["/colocated.v1.ColocatedWorkerService/GetTopology"]


def own_job(change=lambda answer: None) -> bytes:
    """This process's GetTopology answer as a peer would send it, changed by `change`."""
    answer = service_pb2.GetTopologyResponse()
    answer.CopyFrom(topology.topology())
    change(answer)
    return answer.SerializeToString()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (own_job(), None),
        # A newer worker's field is no difference in the job.
        (own_job() + b"\xa0\x06\x01", None),
        (own_job(lambda a: setattr(a, "process_index", 1)), "it says it is process 1 of 1"),
        (
            own_job(lambda a: a.devices.pop()),
            f"it lists other devices ({DEVICES - 1}, this job {DEVICES})",
        ),
        (
            own_job(lambda a: setattr(a.devices[7], "id", 1 << 20)),
            f"it lists other devices ({DEVICES}, this job {DEVICES})",
        ),
        (b"\x0a", "its GetTopology answer does not decode: "),
    ],
    ids=["same", "newer-field", "index", "fewer-devices", "other-device", "bytes"],
)
def test_a_peer_is_of_this_job_when_its_topology_is_this_ones(answer, problem):
    found = topology.not_of_this_job(answer)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)


def mutual_tls(certs: Path, client_ca: Path) -> grpc.ServerCredentials:
    """A worker's port on the test server certificate, for clients `client_ca` signed."""
    files = TlsFiles(
        str(certs / "server.pem"), str(certs / "server.key"), str(client_ca / "ca.pem")
    )
    return server_credentials(files)


def as_client(certs: Path) -> grpc.ChannelCredentials:
    """The test client certificate, trusting the test CA: a controller's, or a relay's."""
    return client_credentials(certs, certs)


def test_a_relay_over_mutual_tls_reaches_its_children_as_itself(mesh, certs, other_certs):
    tls = mutual_tls(certs, certs)
    with (
        worker(tls=tls, relay_credentials=as_client(certs)) as (_, near),
        worker(tls=tls) as (_, far),
        # Its client CA did not sign the relay's certificate: the handshake fails.
        worker(tls=mutual_tls(certs, other_certs)) as (_, wary),
    ):
        with grpc.secure_channel(near, as_client(certs), options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(0, near), (1, far), (2, wary)])
            calls = [(child, 0, summarize_call(mesh, 1)) for child in (0, 1, 2)]
            relay.send(messages=calls)
            answered = [relay.answer(0, 1), relay.answer(1, 1)]
            unreached = relay.end(2)
            relay.finish()
    for parts in answered:
        np.testing.assert_array_equal(doubled(parts), X * 2)
    assert relay.taken == {0: [0], 1: [0]}
    assert code_of(unreached.status.code) == Code.UNAVAILABLE
    assert unreached.status.message.startswith(f"{wary} did not answer GetTopology: UNAVAILABLE")


def test_a_childs_next_session_opens_when_a_message_names_it(mesh):
    with worker() as (_, near), worker(max_sessions=1) as (other, far):
        with grpc.insecure_channel(near, options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(3, far)])
            relay.send(messages=[(3, 0, summarize_call(mesh, 1))])
            relay.answer(3, 1)
            # A request that is neither call nor cancel ends the child's session on its worker.
            relay.send(messages=[(3, 0, b"")])
            broken = relay.end(3)
            # Session 0 has ended: a message still naming it is dropped, one naming 1 opens it.
            relay.send(messages=[(3, 0, summarize_call(mesh, 2)), (3, 1, summarize_call(mesh, 3))])
            again = relay.answer(3, 3)
            relay.finish()
    assert (broken.session, code_of(broken.status.code)) == (0, Code.INVALID_ARGUMENT)
    np.testing.assert_array_equal(doubled(again), X * 2)
    assert [p.id for p in relay.messages[3] if p.end] == [1, 3]
    assert relay.sessions == {3: {0, 1}}


def test_a_cancel_reaches_the_call_it_names_on_the_child(mesh, gate, cancels):
    with worker() as (_, near):
        with grpc.insecure_channel(near, options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(0, near)])
            relay.send(messages=[(0, 0, hold_call(mesh, 1))])
            assert gate.entered.acquire(timeout=DEADLINE)
            relay.send(messages=[(0, 0, service_pb2.SessionRequest(cancel=1))])
            assert cancels.acquire(timeout=DEADLINE)
            gate.release.set()
            [cancelled] = relay.answer(0, 1)
            relay.finish()
    assert code_of(cancelled.status.code) == Code.CANCELLED


@pytest.mark.parametrize(
    ("request_bytes", "problem"),
    [
        (b"\x0a", "request 1: not a RelayRequest"),
        (
            service_pb2.RelayRequest(
                messages=[service_pb2.RelayedMessage(child=4, message=b"")]
            ).SerializeToString(),
            "request 1: messages[0] is to child 4, never given",
        ),
        (
            service_pb2.RelayRequest(
                children=[service_pb2.RelayChild(child=2)]
            ).SerializeToString(),
            "request 1: children[0] (child 2) has no target",
        ),
        (
            service_pb2.RelayRequest(
                children=[
                    service_pb2.RelayChild(child=i, target=f"127.0.0.1:{i + 1}")
                    for i in range(DEVICES + 1)
                ]
            ).SerializeToString(),
            f"request 1: children[{DEVICES}] is one more than the job's {DEVICES} devices",
        ),
    ],
)
def test_a_bad_request_ends_the_relay_invalid_argument_naming_it(request_bytes, problem):
    with worker() as (_, near), grpc.insecure_channel(near) as channel:
        relay = Relay(channel)
        relay._requests.put(request_bytes)
        error = relay.ended()
        relay.close()
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details().startswith(problem)


def test_a_child_given_again_elsewhere_ends_the_relay(mesh):
    with worker() as (_, near), grpc.insecure_channel(near) as channel:
        relay = Relay(channel)
        relay.send(children=[(0, near)])
        relay.send(children=[(0, "127.0.0.1:1")])
        error = relay.ended()
        relay.close()
    assert error.code() == Code.INVALID_ARGUMENT
    assert error.details() == (
        f"request 2: children[0] names child 0 127.0.0.1:1, which was given as {near}"
    )


def test_a_drain_ends_the_relay_unavailable_after_its_childrens_calls(mesh, gate):
    with worker() as (service, near), worker() as (_, far):
        with grpc.insecure_channel(near, options=OPTIONS) as channel:
            relay = Relay(channel)
            relay.send(children=[(0, near), (1, far)])
            # One after the other: both workers of this process take the devices' one turn.
            relay.send(messages=[(0, 0, summarize_call(mesh, 1))])
            relay.answer(0, 1)
            relay.send(messages=[(1, 0, hold_call(mesh, 1))])
            assert gate.entered.acquire(timeout=DEADLINE)
            with futures.ThreadPoolExecutor(1) as pool:
                drained = pool.submit(service.state.limits.drain, DEADLINE)
                gate.release.set()
                held = relay.answer(1, 1)
                error = relay.ended()
                assert drained.result()
            relay.close()
    assert held[-1].end
    assert error.code() == Code.UNAVAILABLE


class GoneBeforeHeaders:
    """The context of a stream whose client left before the worker sent its headers: sending
    them raises, as gRPC's context does for a cancelled call (the relay above cancels a child's
    session it opened a moment before, when the controller's next request is bad)."""

    def send_initial_metadata(self, metadata) -> None:
        raise grpc.RpcError("the client cancelled the call")

    def add_callback(self, callback) -> bool:
        return False  # the call has ended


@pytest.mark.parametrize("serve", [serve_session, serve_relay], ids=["session", "relay"])
def test_a_stream_whose_client_left_before_its_headers_gives_its_place_back(serve):
    state = ColocatedWorker(WorkerPolicy(allowed_modules=ALLOWED), max_sessions=1).state
    stream = serve(state, iter(()), GoneBeforeHeaders())
    with pytest.raises(grpc.RpcError):
        next(stream)
    assert len(state.sessions) == 0
