import type { Specs as SpecsMsg } from "../../gen/ts/colocated/v1/payload";
import { EncodeError } from "../errors";
import type { Specs } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { TableBuilder } from "./table-builder";
import { lowerTreeDef } from "./treedef";

/** Lowers a specs pytree: its leaves go into the shared table, the structure into columns. */
export function lowerSpecs(table: TableBuilder, specs: Specs, path: string): SpecsMsg {
  const { treedef, leaves } = specs;
  if (leaves.length !== treedef.numLeaves) {
    throw new EncodeError(path, `treedef has ${treedef.numLeaves} leaves, got ${leaves.length}`);
  }
  return {
    treedef: lowerTreeDef(treedef),
    leaves: leaves.map((leaf, i) => {
      if (leaf instanceof ShapeDtypeStruct) return table.add(leaf, `${path}.leaves[${i}]`);
      throw new EncodeError(`${path}.leaves[${i}]`, "a spec leaf must be a ShapeDtypeStruct");
    }),
  };
}
