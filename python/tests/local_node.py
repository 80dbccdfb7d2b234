"""A custom pytree node class that no import name finds: trees holding it travel pickled."""

import jax


def local_node_class() -> type:
    """A new registered node class, defined in a function (its qualname has `<locals>`)."""

    @jax.tree_util.register_pytree_node_class
    class Local:
        def __init__(self, value):
            self.value = value

        def tree_flatten(self):
            return (self.value,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(children[0])

    return Local
