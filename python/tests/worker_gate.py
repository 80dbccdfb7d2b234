"""A function a test holds inside a worker for as long as it wants, without clocks.

`hold(x)` says so on stderr, then opens the FIFO named by $WORKER_GATE and
returns x once the test opens it for writing and closes it (every call held
at that moment returns). In-process tests acquire `entered` once per call held,
and set `release` to let them all return.
"""

import os
import sys
import threading

entered = threading.Semaphore(0)  # one release per call held
release = threading.Event()


def hold(x):
    """Returns x once the test lets it: through $WORKER_GATE, or the `release` event."""
    print("worker_gate: holding", file=sys.stderr, flush=True)
    gate = os.environ.get("WORKER_GATE")
    if gate:
        with open(gate, "rb") as fifo:
            fifo.read()
    else:
        entered.release()
        release.wait()
    return x
