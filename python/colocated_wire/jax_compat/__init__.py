"""What differs between the JAX minors colocated_wire supports, one module per difference.

Each module picks its implementation once, when it is imported, by looking for
the feature (hasattr, a probe, a try), never by comparing version strings, and
its docstring says which JAX versions differ and why. The rest of the package
imports these names instead of touching the JAX names that differ, so a new
difference is one new module here. On the newest supported JAX each module
binds exactly what the code called directly before, so nothing is added to a
hot path there.
"""
