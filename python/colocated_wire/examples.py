"""Functions a worker can run by name, for the examples and the RPC tests.

Start a worker with `--allow-module colocated_wire.examples` to allow them.
Each takes jax.Arrays placed with their input shardings and returns arrays
whose shardings JAX derives from them.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp


def affine(x: jax.Array, scale: jax.Array, shift: jax.Array) -> jax.Array:
    """x * scale + shift."""
    return x * scale + shift


def summarize(x: jax.Array, y: jax.Array) -> dict[str, jax.Array]:
    """Several outputs on x's mesh: float, bool and int32, of different shapes."""
    return {
        "doubled": x * 2,
        "sum": x + y,
        "row_sums": jnp.sum(x, axis=1),
        "positive": x > 0,
        "count_positive": jnp.sum(x > 0, dtype=jnp.int32),
    }


def sleep_then_identity(seconds: jax.Array, x: jax.Array) -> jax.Array:
    """Sleeps `seconds` (a scalar), then returns x: a call that is slow on purpose."""
    time.sleep(float(seconds))
    return x


def fail(x: jax.Array) -> jax.Array:
    """Always raises, to show how a function's error reaches the caller."""
    raise ValueError(f"fail was called with a {x.dtype} array of shape {x.shape}")
