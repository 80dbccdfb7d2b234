"""Making a PyTreeDef node from its node data and children, on every supported JAX.

`PyTreeDef.from_node_data_and_children` is JAX 0.8's name; JAX 0.5 calls it
`make_from_node_data_and_children`, and JAX 0.6 and 0.7 have neither. There a
node is rebuilt the long way: each child is unflattened with placeholder
leaves, the container is made from them as its class's unflatten would, and
the result is flattened again.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

from jax import tree_util

_PyTreeDef = tree_util.PyTreeDef


def _rebuild(registry: Any, node_data: tuple[Any, Any] | None, children: Sequence[Any]) -> Any:
    """The node made as a container of its children and flattened again (JAX 0.6 and 0.7)."""
    if node_data is None:
        return registry.flatten(object())[1]
    cls, aux = node_data
    kids = [c.unflatten([object()] * c.num_leaves) for c in children]
    if cls is type(None):
        obj: Any = None
    elif cls is tuple or cls is list:
        obj = cls(kids)
    elif cls is dict or cls is collections.OrderedDict:
        obj = cls(zip(aux, kids, strict=True))
    elif cls is collections.defaultdict:
        factory, keys = aux
        obj = collections.defaultdict(factory, zip(keys, kids, strict=True))
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        obj = cls(*kids)
    else:
        from jax._src import tree_util as jax_tree_util

        entry = jax_tree_util._registry.get(cls)
        if entry is None:
            raise RuntimeError(f"{cls} is not a registered pytree node")
        obj = entry.from_iter(aux, kids)
    return registry.flatten(obj)[1]


from_node_data_and_children: Callable[[Any, tuple[Any, Any] | None, Sequence[Any]], Any]
"""A PyTreeDef node of (class, aux data) over child PyTreeDefs, in `registry`."""
if hasattr(_PyTreeDef, "from_node_data_and_children"):
    from_node_data_and_children = _PyTreeDef.from_node_data_and_children
elif hasattr(_PyTreeDef, "make_from_node_data_and_children"):
    from_node_data_and_children = _PyTreeDef.make_from_node_data_and_children
else:
    from_node_data_and_children = _rebuild
