"""The serving threads share one CPU (worker/affinity.py): the CPU chosen, the pin and its
inheritance in threads, streams given their CPUs back, and a real worker process's threads."""

import os
import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from test_worker_drain import Worker

from colocated_wire.worker import affinity as worker_affinity
from colocated_wire.worker.main import main as worker_main

CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="pinning needs two CPUs to show")


def test_off_pins_nothing():
    assert worker_affinity.choose_cpu("off", {0, 1, 2, 3}, pid=5) is None


def test_auto_spreads_workers_by_pid_over_the_allowed_cpus():
    allowed = {2, 5, 7}
    assert [worker_affinity.choose_cpu("auto", allowed, pid) for pid in (9, 10, 11)] == [2, 5, 7]


def test_auto_on_one_cpu_pins_nothing():
    assert worker_affinity.choose_cpu("auto", {3}, pid=8) is None


def test_a_cpu_number_is_taken_as_given():
    assert worker_affinity.choose_cpu("1", {0, 1}, pid=4) == 1


def test_a_cpu_the_process_may_not_use_is_refused():
    with pytest.raises(ValueError, match="CPU 9 is not one this process may use: 0, 1$"):
        worker_affinity.choose_cpu("9", {0, 1}, pid=4)


def test_a_setting_that_is_no_cpu_is_refused():
    with pytest.raises(ValueError, match="--serving-cpu: 'fast' is not a CPU number"):
        worker_affinity.choose_cpu("fast", {0, 1}, pid=4)


def in_thread(work):
    """Runs `work` in a new thread (so the pin never touches pytest's) and returns its result."""
    result = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join()
    assert len(result) == 1, "the thread failed"
    return result[0]


@two_cpus
def test_threads_started_while_pinned_keep_the_cpu_and_the_pinner_gets_its_cpus_back():
    cpu = max(CPUS)

    def pin_and_start():
        with worker_affinity.pinned(cpu):
            inside = os.sched_getaffinity(0)
            started = in_thread(lambda: os.sched_getaffinity(0))
        return inside, started, os.sched_getaffinity(0)

    inside, started, after = in_thread(pin_and_start)
    assert (inside, started, after) == ({cpu}, {cpu}, CPUS)


@two_cpus
def test_a_stream_spreads_over_the_cpus_from_before_the_pin_and_is_pinned_again_after():
    cpu = min(CPUS)

    def pinned_thread_spreads():
        with worker_affinity.pinned(cpu):
            return in_thread(spread_and_back)

    def spread_and_back():
        with worker_affinity.spread():
            during = os.sched_getaffinity(0)
        return during, os.sched_getaffinity(0)

    assert in_thread(pinned_thread_spreads) == (CPUS, {cpu})


@two_cpus
def test_a_stream_closed_by_another_thread_pins_its_own_thread_again_not_the_closer():
    cpu = min(CPUS)
    opened = threading.Event()
    close_now = threading.Event()
    seen = {}

    def stream():
        with worker_affinity.spread():
            yield os.sched_getaffinity(0)

    def serving_thread():
        generator = stream()
        seen["during"] = next(generator)  # suspended inside spread(), like a cancelled call
        seen["generator"] = generator
        opened.set()
        close_now.wait()
        seen["after"] = os.sched_getaffinity(0)

    def pin_and_serve():
        with worker_affinity.pinned(cpu):
            thread = threading.Thread(target=serving_thread)
            thread.start()
        opened.wait()
        seen["generator"].close()  # this thread, unpinned, ends the stream
        seen["closer"] = os.sched_getaffinity(0)
        close_now.set()
        thread.join()

    in_thread(lambda: pin_and_serve() or True)
    assert (seen["during"], seen["closer"], seen["after"]) == (CPUS, CPUS, {cpu})


def thread_cpus(pid: int) -> dict[int, tuple[str, str]]:
    """Each thread of `pid`: its name and the CPUs it may run on, as /proc lists them."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = dict(
            line.split(":\t", 1)
            for line in (task / "status").read_text().splitlines()
            if ":\t" in line
        )
        threads[int(task.name)] = (status["Name"], status["Cpus_allowed_list"])
    return threads


def check_health(target: str) -> None:
    with grpc.insecure_channel(target) as channel:  # served by a pool thread
        stub = health_pb2_grpc.HealthStub(channel)
        status = stub.Check(health_pb2.HealthCheckRequest(service="")).status
        assert status == health_pb2.HealthCheckResponse.SERVING


@two_cpus
def test_a_worker_process_pins_its_serving_threads_and_nothing_else(tmp_path):
    cpu = max(CPUS)
    worker = Worker(tmp_path / "unused", "--serving-cpu", str(cpu))
    try:
        check_health(worker.target)
        threads = thread_cpus(worker.process.pid)
        everywhere = threads[worker.process.pid][1]  # the main thread gave its pin back
        pinned = [name for name, cpus in threads.values() if cpus == str(cpu)]
        assert len(pinned) >= 2, threads  # gRPC's poller and the thread that answered
        xla = [cpus for name, cpus in threads.values() if name.startswith("tf_XLA")]
        assert xla and set(xla) == {everywhere}, threads
        assert everywhere != str(cpu)
        worker.wait_for(f"serving threads on CPU {cpu}")  # said after `listening on`
    finally:
        worker.process.kill()
        worker.process.wait()


@two_cpus
def test_a_worker_process_told_off_pins_no_thread(tmp_path):
    worker = Worker(tmp_path / "unused", "--serving-cpu", "off")
    try:
        check_health(worker.target)
        threads = thread_cpus(worker.process.pid)
        assert {cpus for _, cpus in threads.values()} == {threads[worker.process.pid][1]}
        worker.wait_for("serving threads on any CPU")  # said after `listening on`
    finally:
        worker.process.kill()
        worker.process.wait()


def test_the_worker_refuses_a_cpu_it_may_not_use(capsys):
    assert worker_main(["--serving-cpu", "4096"]) == 2
    assert "--serving-cpu: CPU 4096 is not one this process may use" in capsys.readouterr().err
