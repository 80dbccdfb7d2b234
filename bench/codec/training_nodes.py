"""The pytree node classes of bench scenario S6 (test/support/training-trees.ts), in a module of
their own: importable by name, as a user's model classes are, so JAX's pickle refers to
them by reference and colocated_wire lifts them by name ("training_nodes.Linear").

Linear and Block are `register_dataclass` classes, as Equinox and Flax users have; LayerNorm
is a namedtuple; ScaleByAdamState and EmptyState are optax's state namedtuples.
"""

import dataclasses
from typing import Any, NamedTuple

from jax import tree_util


@dataclasses.dataclass
class Linear:
    weight: Any
    bias: Any
    activation: str


tree_util.register_dataclass(Linear, data_fields=["weight", "bias"], meta_fields=["activation"])


@dataclasses.dataclass
class Block:
    attn: Any
    mlp: Any
    norm1: Any
    norm2: Any
    num_heads: int


tree_util.register_dataclass(
    Block, data_fields=["attn", "mlp", "norm1", "norm2"], meta_fields=["num_heads"]
)


class LayerNorm(NamedTuple):
    scale: Any
    bias: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class EmptyState(NamedTuple):
    pass
