"""A call's input data checked against the program's input specs, before any is placed.

The count must match the input leaves, each leaf's dtype must have a
fixed-size wire form, and each array's bytes must be its shape's element
count times its itemsize. The expectations are worked out once, when the
program is loaded; a call only compares lengths, and nothing reaches a
device until every input passes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from colocated_wire.decode import Program
from colocated_wire.worker_errors import invalid_argument


@dataclasses.dataclass(frozen=True)
class InputCheck:
    """Per input leaf: its bytes and how it prints, or why it has no wire form."""

    sizes: tuple[int, ...]
    described: tuple[str, ...]
    problems: tuple[str | None, ...]

    def check(self, data: Sequence[bytes | memoryview]) -> None:
        """Raises INVALID_ARGUMENT naming the first input that does not fit its spec."""
        if len(data) != len(self.sizes):
            raise invalid_argument(
                f"inputs: {len(data)} arrays for a program of {len(self.sizes)} input leaves"
            )
        for i, (d, want) in enumerate(zip(data, self.sizes, strict=True)):
            if self.problems[i] is not None:
                raise invalid_argument(f"inputs[{i}]: {self.problems[i]}")
            if len(d) != want:
                raise invalid_argument(
                    f"inputs[{i}]: {len(d)} bytes, but a {self.described[i]} input needs {want}"
                )


def input_check(program: Program) -> InputCheck:
    """What the program's input specs expect of a call's data."""
    sizes, described, problems = [], [], []
    for spec in program.in_leaves:
        dtype = spec.dtype
        wire = isinstance(dtype, np.dtype) and dtype.kind not in "OUSV"
        problems.append(None if wire else f"dtype {dtype} has no fixed-size wire form")
        itemsize = dtype.itemsize if wire else 0
        sizes.append(math.prod(spec.shape) * itemsize)
        name = np.dtype(dtype).name if wire else str(dtype)
        described.append(f"{name}[{','.join(str(d) for d in spec.shape)}]")
    return InputCheck(tuple(sizes), tuple(described), tuple(problems))
