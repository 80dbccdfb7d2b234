"""The colocated-Python worker: ColocatedWorkerService over gRPC, on JAX CPU devices.

One module per concern; `main.py` has the flags and the start, and `python -m
colocated_wire.worker` runs it (docs/layout.md lists the rest). Importing the
package imports nothing else, so that a tool can read one module without JAX.
"""
