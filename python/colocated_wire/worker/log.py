"""The worker's lines on stdout and stderr.

The processes of one job often share a pipe (a shell loop, a supervisor). `print` writes a
line's text and its newline separately, so two processes' lines interleave into one, and
whoever reads `listening on ADDR` from the pipe misreads both addresses. `say` writes each
line in one call, which a pipe keeps whole.
"""

from __future__ import annotations

import sys
from typing import TextIO


def say(text: str, out: TextIO | None = None) -> None:
    """Writes `colocated_wire.worker: text` as one line on `out` (stderr by default)."""
    line(f"colocated_wire.worker: {text}", sys.stderr if out is None else out)


def line(text: str, out: TextIO) -> None:
    """Writes `text` and its newline in one write, then flushes."""
    out.write(text + "\n")
    out.flush()
