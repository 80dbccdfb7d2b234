"""Functions a worker process runs by name in test_worker_keys.py: PRNG keys and float0."""

import jax
import jax.numpy as jnp


def fold_and_draw(keys, n):
    """Keys in and out: each key folded with its count, and two words drawn from it."""
    folded = jax.vmap(jax.random.fold_in)(keys, n)
    return {"keys": folded, "bits": jax.vmap(lambda k: jax.random.bits(k, (2,)))(folded)}


def split_key(key):
    """One key in, its two halves out."""
    return jax.random.split(key)


def tangent_of_int(x, zero):
    """A float0 input (an integer's tangent) and a float0 output beside a float one."""
    return {"double": x * 2, "zero": zero, "made": jnp.zeros(x.shape, jax.dtypes.float0)}
