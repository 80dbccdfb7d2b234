"""GetVersion states the worker's limits, so that a client keeps its calls within them."""

import pytest
from test_worker import get_version, served

from colocated_wire.worker.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS, CallLimits
from colocated_wire.worker.main import parse_args
from colocated_wire.worker.policy import WorkerPolicy
from colocated_wire.worker.service import ColocatedWorker


@pytest.mark.parametrize(
    ("flags", "calls", "nbytes"),
    [
        ([], DEFAULT_MAX_CALLS, DEFAULT_MAX_BYTES),
        # Past 2**32 bytes: the field is a uint64.
        (["--max-concurrent-calls", "3", "--max-inflight-bytes", str(5 << 30)], 3, 5 << 30),
        (["--max-concurrent-calls", "1", "--max-inflight-bytes", "1"], 1, 1),
    ],
)
def test_get_version_reports_the_limits_the_worker_was_started_with(flags, calls, nbytes):
    args = parse_args(flags)
    limits = CallLimits(args.max_concurrent_calls, args.max_inflight_bytes)  # as main() builds it
    with served(ColocatedWorker(WorkerPolicy(), limits)) as stub:
        got = get_version(stub, 0, 1)
    assert got.HasField("limits")
    assert (got.limits.max_concurrent_calls, got.limits.max_inflight_bytes) == (calls, nbytes)
