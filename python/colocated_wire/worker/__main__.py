"""`python -m colocated_wire.worker`: restarts with glibc set to keep freed memory, then serves."""

import sys

from colocated_wire.worker import memory
from colocated_wire.worker.main import main, parse_args

memory.restart_retaining(parse_args().retain_freed_bytes)  # glibc reads it at start
sys.exit(main())
