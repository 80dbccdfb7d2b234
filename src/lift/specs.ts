import type { Specs as SpecsMsg } from "../../gen/ts/colocated/v1/payload";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import type { Specs } from "../model/program";
import { PyTreeDef } from "../model/tree";
import { ACCEPTS } from "../validate/kinds";
import type { References } from "../validate/reference";
import { checkTreeDef } from "../validate/treedef";

/** Lifts a specs pytree; its leaves are the table's ShapeDtypeStruct objects, shared. */
export function liftSpecs(
  message: SpecsMsg | undefined,
  refs: References,
  path: string,
  limits: DecodeLimits,
): Specs {
  if (!message) throw new DecodeError(path, "missing", "specs are required");
  if (!message.treedef) throw new DecodeError(`${path}.treedef`, "missing", "specs need a treedef");
  const treedef = new PyTreeDef(checkTreeDef(message.treedef, `${path}.treedef`, limits));
  if (message.leaves.length !== treedef.numLeaves) {
    throw new DecodeError(
      `${path}.leaves`,
      "invalid-tree",
      `the tree has ${treedef.numLeaves} leaves, the payload ${message.leaves.length}`,
    );
  }
  const leaves = message.leaves.map((ref, i) =>
    refs.require(ref, refs.tableSize, () => `${path}.leaves[${i}]`, ACCEPTS.arraySpec),
  );
  return { treedef, leaves };
}
