"""The worker's allocator (worker/memory.py): the environment it starts itself again with, and
real worker processes that have it: tcmalloc where the system has it, glibc keeping freed memory
when told, and neither when told so."""

import sys
from pathlib import Path

import pytest
from test_worker_drain import Worker

from colocated_wire.worker import memory as worker_memory

GIB = 1 << 30
RETAINING = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(GIB)}
TCMALLOC = "libtcmalloc_minimal.so.4"
glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or worker_memory.platform.libc_ver()[0] != "glibc",
    reason="the settings are glibc's",
)


def preloading(env: dict[str, str], preload: str) -> dict[str, str]:
    return {**env, "LD_PRELOAD": preload, worker_memory.LARGE_ALLOC_REPORT: str(1 << 60)}


@pytest.mark.parametrize("allocator", [worker_memory.AUTO, worker_memory.TCMALLOC])
def test_tcmalloc_is_preloaded_where_the_loader_finds_it(allocator):
    env = worker_memory.allocator_environment({"PATH": "/bin"}, allocator, GIB, TCMALLOC)
    assert env == preloading({"PATH": "/bin"}, TCMALLOC)


def test_a_preload_of_the_callers_stays_after_tcmalloc():
    env = worker_memory.allocator_environment(
        {"LD_PRELOAD": "libfoo.so"}, worker_memory.AUTO, GIB, TCMALLOC
    )
    assert env == preloading({}, f"{TCMALLOC} libfoo.so")


def test_a_large_allocation_report_threshold_of_the_callers_is_kept():
    env = {worker_memory.LARGE_ALLOC_REPORT: "1000"}
    chosen = worker_memory.allocator_environment(env, worker_memory.AUTO, GIB, TCMALLOC)
    assert chosen is not None and chosen[worker_memory.LARGE_ALLOC_REPORT] == "1000"


@glibc_only
@pytest.mark.parametrize(
    ("allocator", "tcmalloc"), [(worker_memory.AUTO, None), (worker_memory.GLIBC, TCMALLOC)]
)
def test_glibc_keeps_freed_memory_without_tcmalloc_or_when_told(allocator, tcmalloc):
    env = worker_memory.allocator_environment({"PATH": "/bin"}, allocator, GIB, tcmalloc)
    assert env == {"PATH": "/bin", **RETAINING}


def test_tcmalloc_insisted_on_and_missing_says_what_to_install():
    with pytest.raises(ValueError, match="apt-get install libtcmalloc-minimal4"):
        worker_memory.allocator_environment({}, worker_memory.TCMALLOC, GIB, None)


@pytest.mark.parametrize("name", worker_memory.SETTINGS)
def test_a_glibc_setting_already_chosen_leaves_the_environment_as_it_is(name):
    assert (
        worker_memory.allocator_environment({name: "8"}, worker_memory.AUTO, GIB, TCMALLOC) is None
    )


def test_tcmalloc_already_preloaded_leaves_the_environment_as_it_is():
    env = {"LD_PRELOAD": f"/usr/lib/{TCMALLOC}"}
    assert worker_memory.allocator_environment(env, worker_memory.GLIBC, GIB, TCMALLOC) is None


def test_nothing_to_keep_with_glibc_leaves_the_environment_as_it_is():
    assert worker_memory.allocator_environment({}, worker_memory.GLIBC, 0, TCMALLOC) is None
    assert worker_memory.allocator_environment({}, worker_memory.AUTO, 0, None) is None


def environment_of(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


def tcmalloc_mapped(pid: int) -> bool:
    return "libtcmalloc" in Path(f"/proc/{pid}/maps").read_text()


def started(tmp_path, *flags) -> tuple[dict[str, str], bool, str]:
    """A real worker's environment, whether tcmalloc is in its memory, and its start-up line."""
    worker = Worker(tmp_path / "unused", *flags)
    try:
        worker.wait_for(" CPU devices (")
        line = next(x for x in worker.stderr().splitlines() if " CPU devices (" in x)
        return environment_of(worker.process.pid), tcmalloc_mapped(worker.process.pid), line
    finally:
        worker.process.kill()
        worker.process.wait()


@glibc_only
def test_a_worker_process_serves_with_tcmalloc(tmp_path):
    # .ci/run installs Debian's libtcmalloc-minimal4, as docs/worker.md asks of a host.
    assert worker_memory.find_tcmalloc() is not None, "install libtcmalloc-minimal4"
    env, mapped, line = started(tmp_path)
    assert mapped and "tcmalloc" in env["LD_PRELOAD"]
    assert not any(name in env for name in worker_memory.SETTINGS)
    assert line.endswith(", tcmalloc for memory")


@glibc_only
@pytest.mark.parametrize(
    ("flags", "expected", "said"),
    [
        (
            (),
            {**RETAINING, "MALLOC_TRIM_THRESHOLD_": str(worker_memory.DEFAULT_RETAINED_BYTES)},
            "glibc's malloc keeping 4 GiB freed",
        ),
        (("--retain-freed-bytes", str(GIB)), RETAINING, "glibc's malloc keeping 1 GiB freed"),
        (("--retain-freed-bytes", "0"), {}, "the system's malloc as it is"),
    ],
)
def test_a_worker_process_told_glibc_serves_with_its_settings(tmp_path, flags, expected, said):
    env, mapped, line = started(tmp_path, "--allocator", "glibc", *flags)
    assert {k: env[k] for k in worker_memory.SETTINGS if k in env} == expected
    assert not mapped
    assert line.endswith(f", {said}")
