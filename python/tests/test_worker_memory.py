"""The worker keeps freed memory (worker/memory.py): the environment it starts itself again
with, and a real worker process that has it, or not when told so."""

import sys
from pathlib import Path

import pytest
from test_worker_drain import Worker

from colocated_wire.worker import memory as worker_memory

GIB = 1 << 30
RETAINING = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(GIB)}
glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or worker_memory.platform.libc_ver()[0] != "glibc",
    reason="the settings are glibc's",
)


@glibc_only
def test_the_environment_gains_the_settings_and_keeps_the_rest():
    assert worker_memory.retaining_environment({"PATH": "/bin"}, GIB) == {
        "PATH": "/bin",
        **RETAINING,
    }


@pytest.mark.parametrize("name", worker_memory.SETTINGS)
def test_a_setting_already_chosen_leaves_the_environment_as_it_is(name):
    assert worker_memory.retaining_environment({name: "8"}, GIB) is None


def test_nothing_to_keep_leaves_the_environment_as_it_is():
    assert worker_memory.retaining_environment({}, 0) is None


def environment_of(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


@glibc_only
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ((), {**RETAINING, "MALLOC_TRIM_THRESHOLD_": str(worker_memory.DEFAULT_RETAINED_BYTES)}),
        (("--retain-freed-bytes", str(GIB)), RETAINING),
        (("--retain-freed-bytes", "0"), {}),
    ],
)
def test_a_worker_process_serves_with_the_settings(tmp_path, flags, expected):
    worker = Worker(tmp_path / "unused", *flags)
    try:
        env = environment_of(worker.process.pid)
        assert {k: env[k] for k in worker_memory.SETTINGS if k in env} == expected
    finally:
        worker.process.kill()
        worker.process.wait()
