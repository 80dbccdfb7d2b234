import type { Specs } from "../../model/program";
import type { ShapeDtypeStruct } from "../../model/shape-dtype-struct";
import { treeFlatten } from "../../model/tree-util";
import { tuple } from "../../model/tree-values";

/**
 * The input specs of a call `f(*args, **kwargs)`: JAX's colocated Python flattens its inputs
 * as the pair (args, kwargs), and the worker unflattens them the same way.
 */
export function callInputs(args: readonly unknown[], kwargs: Record<string, unknown> = {}): Specs {
  return treeFlatten<ShapeDtypeStruct>(tuple(tuple(...args), kwargs));
}
