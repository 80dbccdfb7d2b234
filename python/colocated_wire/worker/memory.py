"""The allocator the worker serves with: tcmalloc where the system has it, else glibc set to
keep freed memory for the next call.

Two costs of glibc's malloc show in a worker. A page the process has never written costs a
fault and the kernel's zeroing on its first write: 2-7 µs per 4 KiB page on these machines,
about a second per GiB. glibc gives each block over 32 MiB (a shard's buffer, an XLA output)
an mmap of its own and unmaps it when freed, and gives other threads arenas that cannot hold
such blocks at all, so a 1 GiB round trip wrote about 3 GiB of fresh pages on every call.
With one arena, no mmaps and a high trim threshold, freed blocks stay in the heap and the
next call reuses them. But one arena is one lock and one set of free lists for every thread:
gRPC's I/O threads allocate on one CPU and the serving threads on another
(worker/affinity.py), and sharing it cost a small call about an eighth of its CPU, a call
over 8 devices a sixth (docs/performance-journal.md, wave 21).

tcmalloc (gperftools' libtcmalloc_minimal, Debian's libtcmalloc-minimal4, the allocator
Cloud TPU VMs preload for JAX) has neither cost: each thread keeps its own small blocks,
and freed spans of any size stay in its page heap for the next call, given back to the
system only slowly. So the worker takes it when the dynamic loader finds it
(`--allocator auto`), and glibc with the settings above otherwise (`--retain-freed-bytes`).

The dynamic loader reads LD_PRELOAD, and glibc its settings, when the process starts, and a
thread keeps the arena it first took, so neither can be chosen from `main`, after the
threads started at import. The worker therefore runs itself again with its choice in its
environment (same pid, same command line). An LD_PRELOAD that already names tcmalloc, or
any glibc setting already set, by the caller or by that second start, leaves the
environment as it is. Processes the worker's functions start inherit it.
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import platform
import sys
from collections.abc import Mapping

from colocated_wire.worker.flags import non_negative

DEFAULT_RETAINED_BYTES = 4 << 30
AUTO, TCMALLOC, GLIBC = "auto", "tcmalloc", "glibc"

# glibc's names for the settings (mallopt's M_ARENA_MAX, M_MMAP_MAX and M_TRIM_THRESHOLD).
SETTINGS = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")
# tcmalloc writes a line to stderr for every allocation past this (1 GiB by default): arrays
# that large are what the sharded calls are for.
LARGE_ALLOC_REPORT = "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD"


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --allocator and --retain-freed-bytes."""
    parser.add_argument(
        "--allocator",
        choices=[AUTO, TCMALLOC, GLIBC],
        default=AUTO,
        help="the malloc the worker runs with: 'auto' (default) tcmalloc where the system has"
        " libtcmalloc_minimal (Debian: libtcmalloc-minimal4), else glibc keeping freed memory;"
        " 'tcmalloc' or 'glibc' to insist",
    )
    parser.add_argument(
        "--retain-freed-bytes",
        type=non_negative,
        default=DEFAULT_RETAINED_BYTES,
        metavar="BYTES",
        help="with glibc's malloc, freed memory the worker keeps to reuse, so big arrays do not"
        " fault in fresh pages on every call; 0 keeps glibc's defaults (default 4 GiB)",
    )


def find_tcmalloc() -> str | None:
    """The name the dynamic loader knows tcmalloc by (its soname), or None when it has none."""
    return ctypes.util.find_library("tcmalloc_minimal") or ctypes.util.find_library("tcmalloc")


def allocator_environment(
    env: Mapping[str, str], allocator: str, retained_bytes: int, tcmalloc: str | None
) -> dict[str, str] | None:
    """`env` with the allocator chosen (`tcmalloc`: what find_tcmalloc found), or None to leave
    it be: the choice already made, or glibc's defaults asked for. ValueError when tcmalloc is
    insisted on and there is none."""
    if allocator == TCMALLOC and tcmalloc is None:
        raise ValueError(
            "--allocator tcmalloc: the dynamic loader finds no libtcmalloc_minimal"
            " (Debian: apt-get install libtcmalloc-minimal4)"
        )
    if "tcmalloc" in env.get("LD_PRELOAD", "") or any(name in env for name in SETTINGS):
        return None
    if allocator != GLIBC and tcmalloc is not None:
        preload = " ".join(p for p in (tcmalloc, env.get("LD_PRELOAD", "")) if p)
        report = env.get(LARGE_ALLOC_REPORT, str(1 << 60))
        return {**env, "LD_PRELOAD": preload, LARGE_ALLOC_REPORT: report}
    if retained_bytes <= 0 or platform.libc_ver()[0] != "glibc":
        return None
    return {
        **env,
        "MALLOC_ARENA_MAX": "1",
        "MALLOC_MMAP_MAX_": "0",
        "MALLOC_TRIM_THRESHOLD_": str(retained_bytes),
    }


def restart_with_allocator(allocator: str, retained_bytes: int) -> None:
    """Runs this process's command again with its allocator chosen (see the module's
    docstring); returns only if the environment stays as it is. ValueError as
    allocator_environment's."""
    env = allocator_environment(os.environ, allocator, retained_bytes, find_tcmalloc())
    if env is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)


def describe() -> str:
    """The allocator this process runs with, for the worker's start-up line."""
    if tcmalloc_loaded():
        return "tcmalloc for memory"
    retained = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if retained is not None and os.environ.get("MALLOC_ARENA_MAX") == "1":
        return f"glibc's malloc keeping {int(retained) / (1 << 30):g} GiB freed"
    return "the system's malloc as it is"


def tcmalloc_loaded() -> bool:
    """Whether tcmalloc is mapped into this process (Linux; False elsewhere)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return any("libtcmalloc" in line for line in maps)
    except OSError:
        return False
