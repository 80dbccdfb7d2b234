"""`python -m colocated_wire.worker`: restarts with its allocator chosen, then serves."""

import sys

from colocated_wire.worker import log, memory
from colocated_wire.worker.main import main, parse_args

args = parse_args()
try:  # the loader and glibc read it at start (worker/memory.py)
    memory.restart_with_allocator(args.allocator, args.retain_freed_bytes)
except ValueError as e:
    log.say(str(e))
    sys.exit(2)
sys.exit(main())
