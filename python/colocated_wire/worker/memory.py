"""Freed memory kept for the next call, so that big arrays stop paying for fresh pages.

A page the process has never written costs a fault and the kernel's zeroing on
its first write: 2-7 µs per 4 KiB page on these machines, about a second per
GiB. glibc gives each block over 32 MiB (a shard's buffer, an XLA output) an
mmap of its own and unmaps it when freed, and gives other threads arenas that
cannot hold such blocks at all, so a 1 GiB round trip wrote about 3 GiB of
fresh pages on every call. With one arena, no mmaps and a high trim threshold,
freed blocks stay in the heap and the next call reuses them; the heap gives
back to the system only what lies free above the threshold at its top.

glibc reads these settings from the environment when the process starts, and
a thread keeps the arena it first took, so mallopt from `main` would come after
the threads started at import. The worker therefore runs itself again with the
settings in its environment (same pid, same command line). Any of them already
set, by the caller or by that second start, leaves the environment as it is.
Processes the worker's functions start inherit them.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping

from colocated_wire.worker.flags import non_negative

DEFAULT_RETAINED_BYTES = 4 << 30

# glibc's names for the settings (mallopt's M_ARENA_MAX, M_MMAP_MAX and M_TRIM_THRESHOLD).
SETTINGS = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")


def add_flags(parser) -> None:
    parser.add_argument(
        "--retain-freed-bytes",
        type=non_negative,
        default=DEFAULT_RETAINED_BYTES,
        metavar="BYTES",
        help="freed memory the worker keeps to reuse, so big arrays do not fault in fresh pages"
        " on every call; 0 keeps the allocator's defaults (default 4 GiB; glibc only)",
    )


def retaining_environment(env: Mapping[str, str], retained_bytes: int) -> dict[str, str] | None:
    """`env` with glibc set to keep `retained_bytes` of freed memory, or None to leave it be:
    nothing to keep, not glibc, or some setting already chosen."""
    if retained_bytes <= 0 or platform.libc_ver()[0] != "glibc":
        return None
    if any(name in env for name in SETTINGS):
        return None
    return {
        **env,
        "MALLOC_ARENA_MAX": "1",
        "MALLOC_MMAP_MAX_": "0",
        "MALLOC_TRIM_THRESHOLD_": str(retained_bytes),
    }


def restart_retaining(retained_bytes: int) -> None:
    """Runs this process's command again with memory retained (see the module's docstring);
    returns only if the environment stays as it is."""
    env = retaining_environment(os.environ, retained_bytes)
    if env is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)
