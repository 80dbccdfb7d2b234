"""Functions a worker can run by name, for the examples and the RPC tests.

Start a worker with `--allow-module colocated_wire.examples` to allow them.
Each takes jax.Arrays placed with their input shardings and returns arrays
whose shardings JAX derives from them.
"""

from __future__ import annotations

import sys
import threading

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


@jax.jit
def total(x: jax.Array) -> jax.Array:
    """The sum of x's elements, jitted: over a job of many workers, a reduction across them."""
    return jnp.sum(x)


# One release lets one blocked call return, so a test controls when a call ends.
_releases = threading.Semaphore(0)


def block_until_released(x: jax.Array) -> jax.Array:
    """Says so on stderr, blocks until a call of `release`, then returns x: a call that
    lasts exactly as long as a test wants, to test deadlines and dying workers."""
    print("block_until_released: blocked", file=sys.stderr, flush=True)
    _releases.acquire()
    return x


def release(x: jax.Array) -> jax.Array:
    """Lets one call of `block_until_released` return; returns x."""
    _releases.release()
    return x


def fail(x: jax.Array) -> jax.Array:
    """Always raises, to show how a function's error reaches the caller."""
    raise ValueError(f"fail was called with a {x.dtype} array of shape {x.shape}")


def make_key(x: jax.Array) -> jax.Array:
    """A PRNG key array: its spec has a key dtype, and its data no fixed-size wire form."""
    return jax.random.split(jax.random.key(0), x.shape[0])


def train_step(params: dict) -> dict:
    """One SGD step on the mean square of every parameter: the function of the CLI's example
    program (`colocated-wire demo --run`), a tree of parameters in and out."""

    def loss_fn(p: dict) -> jax.Array:
        leaves = jax.tree_util.tree_leaves(p)
        return sum(jnp.mean(leaf**2) for leaf in leaves) / len(leaves)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "params": jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)}
