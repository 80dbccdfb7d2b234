"""Two real worker processes of four CPU devices each as one JAX job (issue 15): both report the
same job in GetTopology, a sharded call whose function reduces across both processes gives the
right values from each member, each member takes and returns only its own devices' shards, a
call one member refuses is aborted by the others (and the job still works), and the job flags
are checked before JAX starts.

The test process has its own 1,024 devices (ids 0-1023), so a program over the job's devices
(ids 0-3 and 2048-2051) is written over ids 0-7 and its device list given the job's ids.
Every wait has a deadline: the members' `listening on` lines, the channels' readiness.
"""

import os
import queue
import socket
import subprocess
import sys
import threading
import uuid
from concurrent import futures
from pathlib import Path

import grpc
import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P
from test_worker import served
from test_worker_sharded import Req, chunk

from colocated_wire import deserialize_specs, examples, serialize_program
from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2, service_pb2_grpc
from colocated_wire.entries.device_list import lower_device_ids
from colocated_wire.iota import materialize_iota
from colocated_wire.worker import job as worker_job
from colocated_wire.worker import main as worker
from colocated_wire.worker.arrays import index_of
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker

JOB_IDS = [0, 1, 2, 3, 2048, 2049, 2050, 2051]
DEADLINE = 120  # seconds; a loaded machine starts a job in a few
X = np.arange(32, dtype=np.float32).reshape(8, 4) - 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Member:
    """`python -m colocated_wire.worker` as process `index` of a job; stderr goes to a file."""

    def __init__(self, coordinator: str, index: int, log: Path, flags: tuple[str, ...] = ()):
        self.log = log
        args = ["--port", "0", "--devices", "4", "--allow-module", "colocated_wire.examples"]
        args.extend(flags)
        args.append("--allow-pickle")  # on loopback: for the test's own functions
        job = ["--coordinator", coordinator, "--num-processes", "2", "--process-id", str(index)]
        with open(log, "w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "colocated_wire.worker", *args, *job],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env={**os.environ, "XLA_FLAGS": ""},
            )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # end of stream

    def target(self) -> str:
        """HOST:PORT, once the member has joined the job and serves."""
        try:
            first = self.lines.get(timeout=DEADLINE)
        except queue.Empty:
            first = f"nothing within {DEADLINE} s"
        assert first.startswith("listening on "), first + self.log.read_text()
        return first.split()[-1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Stubs of process 0 and process 1 of a running two-process job."""
    folder = tmp_path_factory.mktemp("job")
    coordinator = f"127.0.0.1:{free_port()}"
    members = [Member(coordinator, i, folder / f"member{i}.log") for i in range(2)]
    channels = []
    try:
        for m in members:
            channels.append(grpc.insecure_channel(m.target()))
            grpc.channel_ready_future(channels[-1]).result(timeout=DEADLINE)
        yield [service_pb2_grpc.ColocatedWorkerServiceStub(c) for c in channels]
    finally:
        for c in channels:
            c.close()
        for m in members:  # all at once: JAX's shutdown waits for every process
            m.process.terminate()
        for m in members:
            try:
                m.process.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                m.process.kill()


def renumbered(data: bytes, message, ids: dict[int, int]) -> bytes:
    """A payload whose device lists and single devices name `ids[i]` for each id i."""
    msg = message.FromString(data)
    kinds = {e.WhichOneof("kind") for e in msg.table.entries}
    assert kinds & {"device_list", "single_device_sharding"}, "the payload names no devices"
    for entry in msg.table.entries:
        if entry.WhichOneof("kind") == "single_device_sharding":
            single = entry.single_device_sharding
            single.device_id = ids[single.device_id]
    lists = [e.device_list for e in msg.table.entries if e.WhichOneof("kind") == "device_list"]
    for found in lists:
        case = found.WhichOneof("ids")
        if case == "plain":
            old = list(found.plain.ids)
        elif case == "delta":
            old = np.cumsum(list(found.delta.deltas)).tolist()
        else:
            io = found.iota.iota
            old = (
                found.iota.offset + materialize_iota(io.reshape_dims, io.transpose_perm)
            ).tolist()
        found.CopyFrom(lower_device_ids([ids[i] for i in old]))
    return msg.SerializeToString()


def job_program(fun, *specs, mesh=None) -> bytes:
    """The program over the test's devices 0-7 (its first spec's mesh, or `mesh`), with the
    job's device ids instead."""
    leaves, treedef = jax.tree_util.tree_flatten((tuple(specs), {}))
    devices = list((mesh or specs[0].sharding.mesh).devices.flat)
    data = serialize_program(fun, treedef, leaves, None, None, devices, target_minor_version=0)
    return renumbered(data, payload_pb2.ProgramPayload, dict(enumerate(JOB_IDS)))


def from_job(specs: bytes):
    """Output specs a member wrote, read over the test's devices 0-7."""
    test_ids = {job_id: i for i, job_id in enumerate(JOB_IDS)}
    return deserialize_specs(renumbered(specs, payload_pb2.SpecsPayload, test_ids))


def process_of(device: jax.Device) -> int:
    """Which member holds the test device standing for job device JOB_IDS[device.id]."""
    return 0 if JOB_IDS[device.id] < 2048 else 1


def member_shards(spec, value, member: int):
    """The distinct shards of `value` that at least one of the member's devices holds."""
    held = {}
    for device, slices in spec.sharding.devices_indices_map(spec.shape).items():
        if process_of(device) == member:
            index = index_of(slices, spec.shape)
            held.setdefault(index, np.ascontiguousarray(value[slices]).tobytes())
    return list(held.items())


def requests_for(member: int, program: bytes, specs, values) -> list[Req]:
    start = Req()
    start.start.version = 0
    start.start.program.MergeFromString(program)
    out = [start]
    for leaf, (spec, value) in enumerate(zip(specs, values, strict=True)):
        for index, data in member_shards(spec, value, member):
            out.append(chunk(leaf, 0, data, index, last=True))
    return [*out, Req(end=True)]


def named() -> tuple[tuple[str, str]]:
    """Metadata naming a new call of the job, the same for every member."""
    return ((worker_job.CALL_ID_KEY, uuid.uuid4().hex),)


def call_job(job, program: bytes, specs, values):
    """Every member's answer, called at once (the function is SPMD: all must run it): per
    member, (its output specs bytes, {(leaf, index): array})."""
    name = named()

    def one(member: int):
        stream = job[member].ExecuteSharded(
            iter(requests_for(member, program, specs, values)), timeout=DEADLINE, metadata=name
        )
        responses = list(stream)
        specs_bytes = responses[0].output_specs.SerializeToString()
        _, leaves = from_job(specs_bytes)
        got, received = {}, {}
        for r in responses[1:-1]:
            c = r.chunk
            if c.HasField("index"):
                key = (c.leaf, tuple(zip(c.index.start, c.index.stop, strict=True)))
                received[key] = b""
            received[key] += c.data
            if c.last:
                assert key not in got, f"member {member} sent {key} twice"
                shape = tuple(b - a for a, b in key[1])
                got[key] = np.frombuffer(received[key], leaves[c.leaf].dtype).reshape(shape)
        assert responses[-1].WhichOneof("part") == "end"
        return specs_bytes, got

    with futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, range(2)))


@pytest.fixture(scope="module")
def mesh(devices):
    return Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))


def spec(mesh, *partition):
    return jax.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P(*partition)))


def test_both_members_report_the_same_job_each_process_once(job):
    answers = [stub.GetTopology(service_pb2.GetTopologyRequest(), timeout=DEADLINE) for stub in job]
    assert [a.process_index for a in answers] == [0, 1]
    assert [a.process_count for a in answers] == [2, 2]
    listed = [
        [(d.id, d.process_index, d.platform, d.kind, list(d.coords)) for d in a.devices]
        for a in answers
    ]
    assert listed[0] == listed[1]
    assert listed[0] == [(i, 0 if i < 2048 else 1, "cpu", "cpu", []) for i in JOB_IDS]


def test_a_jitted_sum_across_both_processes_is_right_on_each_member(job, mesh):
    specs = [spec(mesh, "x", "y")]
    answers = call_job(job, job_program(examples.total, *specs), specs, [X])
    assert answers[0][0] == answers[1][0], "the members wrote different output specs"
    for _, got in answers:
        assert list(got) == [(0, ())]
        assert got[(0, ())] == X.sum()


def test_each_member_returns_only_its_own_shards_each_once(job, mesh):
    specs = [spec(mesh, "x", "y"), spec(mesh)]  # y replicated over both processes
    answers = call_job(job, job_program(examples.summarize, *specs), specs, [X, X + 1])
    assert answers[0][0] == answers[1][0]
    _, leaves = from_job(answers[0][0])
    names = sorted(["count_positive", "doubled", "positive", "row_sums", "sum"])  # dict order
    expected = {
        "count_positive": np.sum(X > 0, dtype=np.int32),
        "doubled": X * 2,
        "positive": X > 0,
        "row_sums": X.sum(axis=1),
        "sum": X + X + 1,
    }
    for member, (_, got) in enumerate(answers):
        for (leaf, index), value in got.items():
            slices = tuple(slice(a, b) for a, b in index)
            np.testing.assert_array_equal(value, expected[names[leaf]][slices])
        # Exactly the distinct shards its own devices hold, leaf by leaf.
        for leaf, out in enumerate(leaves):
            held = {
                index_of(s, out.shape)
                for d, s in out.sharding.devices_indices_map(out.shape).items()
                if process_of(d) == member
            }
            assert {i for (k, i) in got if k == leaf} == held, (member, names[leaf])
    rows = {i for (k, i) in answers[1][1] if k == names.index("doubled")}
    assert rows == {((4, 8), (c, c + 1)) for c in range(4)}  # process 1 holds rows 4-7


def test_an_unsharded_input_is_on_the_programs_first_device_so_member_0_alone_has_it(job, mesh):
    unsharded = jax.ShapeDtypeStruct((8, 4), np.float32)
    program = job_program(examples.total, unsharded, mesh=mesh)
    first = SingleDeviceSharding(mesh.devices.flat[0])  # where the worker puts it
    split = [jax.ShapeDtypeStruct((8, 4), np.float32, sharding=first)]
    answers = call_job(job, program, split, [X])
    assert answers[0][0] == answers[1][0]
    assert [list(got) for _, got in answers] == [[(0, ())], []]
    assert answers[0][1][(0, ())] == X.sum()


def test_process_local_outputs_become_the_jobs_replicated_arrays(job, mesh):
    def fun(x):  # pickled: x itself, a global sum, a Python number, an array made locally
        return {"same": x, "total": jax.numpy.sum(x), "step": 7, "zeros": jax.numpy.zeros(2)}

    specs = [spec(mesh, "x", "y")]
    answers = call_job(job, job_program(fun, *specs), specs, [X])
    assert answers[0][0] == answers[1][0], "the members wrote different output specs"
    _, leaves = from_job(answers[0][0])
    everywhere = NamedSharding(Mesh(np.array(mesh.devices.flat), ("job",)), P())
    same, step, _, zeros = leaves  # the dict's keys in order: same, step, total, zeros
    assert (step.sharding, zeros.sharding) == (everywhere, everywhere)
    assert same.sharding == specs[0].sharding
    for member, (_, got) in enumerate(answers):
        assert got[(1, ())] == 7
        np.testing.assert_array_equal(got[(3, ((0, 2),))], np.zeros(2, np.float32))
        assert got[(2, ())] == X.sum()
        rows = (0, 4) if member == 0 else (4, 8)
        assert {i for (k, i) in got if k == 0} == {(rows, (c, c + 1)) for c in range(4)}


def test_a_member_refuses_a_shard_none_of_its_devices_holds(job, mesh):
    s = spec(mesh, "x", "y")
    (index, data), *_ = member_shards(s, X, 0)
    start = requests_for(1, job_program(examples.total, s), [s], [X])[0]
    with pytest.raises(grpc.RpcError) as e:
        list(job[1].ExecuteSharded(iter([start, chunk(0, 0, data, index, last=True)])))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "[0:4,0:1]: not a shard of" in e.value.details()
    assert "held by this worker (process 1 of 2)" in e.value.details()


def test_when_one_member_refuses_a_call_the_others_abort_it_and_the_job_still_works(job, mesh):
    s = spec(mesh, "x", "y")
    program = job_program(examples.total, s)
    name = named()
    # Member 0 gets its whole call; member 1 a chunk it refuses, so it never runs the function.
    whole = requests_for(0, program, [s], [X])
    bad = [requests_for(1, program, [s], [X])[0], chunk(0, 0, b"x", ((0, 4), (0, 1)), last=True)]
    with futures.ThreadPoolExecutor(1) as pool:
        member0 = pool.submit(
            lambda: list(job[0].ExecuteSharded(iter(whole), timeout=10, metadata=name))
        )
        with pytest.raises(grpc.RpcError) as refused:
            list(job[1].ExecuteSharded(iter(bad), timeout=DEADLINE, metadata=name))
        with pytest.raises(grpc.RpcError) as aborted:
            member0.result()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert aborted.value.code() == grpc.StatusCode.ABORTED, aborted.value.details()
    assert f"call {name[0][1]}: not every member of the job was ready" in aborted.value.details()
    # Nobody entered the collective, so the next call runs on both.
    answers = call_job(job, program, [s], [X])
    assert [got[(0, ())] for _, got in answers] == [X.sum(), X.sum()]


def test_a_call_named_badly_is_refused(job, mesh):
    s = spec(mesh, "x", "y")
    requests = requests_for(0, job_program(examples.total, s), [s], [X])
    with pytest.raises(grpc.RpcError) as e:
        list(job[0].ExecuteSharded(iter(requests), metadata=((worker_job.CALL_ID_KEY, "a b"),)))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "metadata colocated-call-id: 'a b' is not 1-128 letters" in e.value.details()


def test_session_calls_named_by_job_call_id_run_together_on_every_member(job, mesh):
    s = spec(mesh, "x", "y")
    program = job_program(examples.total, s)
    names = [uuid.uuid4().hex for _ in range(2)]

    def session(member: int) -> list[service_pb2.SessionResponse]:
        start, *chunks, _ = requests_for(member, program, [s], [X])
        calls = []
        for call_id, name in enumerate(["a b", *names], start=1):
            req = service_pb2.SessionRequest()
            req.call.id, req.call.job_call_id = call_id, name
            req.call.start.CopyFrom(start.start)
            req.call.inputs.extend(c.chunk for c in chunks)
            calls.append(req)
        return list(job[member].Session(iter(calls), timeout=DEADLINE))

    with futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(session, range(2)))
    for parts in answers:
        bad, *good = parts
        assert (bad.id, bad.status.code) == (1, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        assert bad.status.message.startswith("job_call_id: 'a b' is not 1-128 letters")
        assert [(p.id, p.end) for p in good] == [(2, True), (3, True)]
        for p in good:
            [c] = p.outputs
            assert np.frombuffer(c.data, np.float32)[0] == X.sum()


def test_unary_execute_of_a_program_over_both_processes_is_refused(job, mesh):
    s = spec(mesh, "x", "y")
    req = service_pb2.ExecuteRequest(version=0)
    req.program.MergeFromString(job_program(examples.total, s))
    req.inputs.add(data=X.tobytes())
    with pytest.raises(grpc.RpcError) as e:
        job[0].Execute(req, timeout=DEADLINE)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "device 2048 is process 1's; this worker is process 0 of 2" in e.value.details()
    assert "ExecuteSharded" in e.value.details()


def test_a_worker_without_job_flags_is_a_job_of_one_process(devices):
    with served(ColocatedWorker(WorkerPolicy())) as stub:
        answer = stub.GetTopology(service_pb2.GetTopologyRequest())
    assert (answer.process_count, answer.process_index) == (1, 0)
    assert [d.id for d in answer.devices] == [d.id for d in devices]
    assert {d.process_index for d in answer.devices} == {0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--coordinator", "h:1"], "missing --num-processes, --process-id"),
        (["--num-processes", "2", "--process-id", "0"], "missing --coordinator"),
        (["--coordinator", "h", "--num-processes", "2", "--process-id", "0"], "is not HOST:PORT"),
        (["--coordinator", "h:x", "--num-processes", "2", "--process-id", "0"], "is not HOST:PORT"),
        (
            ["--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"],
            "at least 1, not 0",
        ),
        (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"], "outside 0 to 1"),
        (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "-1"], "outside 0 to 1"),
        (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "0"]
            + ["--heartbeat-timeout", "0"],
            "at least 1 s, not 0",
        ),
    ],
)
def test_job_flags_are_all_three_and_consistent(argv, message):
    with pytest.raises(ValueError, match=message):
        worker_job.check_flags(worker.parse_args(argv))


def test_no_job_flags_is_fine():
    worker_job.check_flags(worker.parse_args([]))  # raises nothing


def test_with_a_short_heartbeat_timeout_a_survivor_ends_soon_after_a_member_dies(tmp_path):
    coordinator = f"127.0.0.1:{free_port()}"
    flags = ("--heartbeat-timeout", "2")
    members = [Member(coordinator, i, tmp_path / f"member{i}.log", flags) for i in range(2)]
    try:
        for m in members:
            m.target()
        members[1].process.kill()
        # JAX's default (100 s) would outlive this wait; 2 s of missed heartbeats end it.
        code = members[0].process.wait(timeout=60)
        assert code != 0
        assert "stopped sending heartbeats" in members[0].log.read_text()
    finally:
        for m in members:
            m.process.kill()
            m.process.wait()


def test_the_worker_process_refuses_bad_job_flags_before_jax_starts():
    run = subprocess.run(
        [sys.executable, "-m", "colocated_wire.worker", "--coordinator", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert run.returncode == 2
    assert "join a job together; missing --num-processes, --process-id" in run.stderr
    assert "listening" not in run.stdout
