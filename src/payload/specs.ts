import type { Specs as SpecsMessage } from "../../gen/ts/colocated/v1/payload";
import { ARRAY_SPEC } from "../entries/array-spec";
import * as treedef from "../entries/treedef";
import { DecodeError, EncodeError } from "../errors";
import type { Specs } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext } from "../table/lower-table";

/** Lowers a specs pytree: its leaves go into the shared table, the structure into columns. */
export function lower(specs: Specs, ctx: LowerContext): SpecsMessage {
  const { path, table } = ctx;
  const { treedef: tree, leaves } = specs;
  if (leaves.length !== tree.numLeaves) {
    throw new EncodeError(path, `treedef has ${tree.numLeaves} leaves, got ${leaves.length}`);
  }
  const refs = leaves.map((leaf, i) => {
    if (leaf instanceof ShapeDtypeStruct) return table.add(leaf, () => `${path}.leaves[${i}]`);
    throw new EncodeError(`${path}.leaves[${i}]`, "a spec leaf must be a ShapeDtypeStruct");
  });
  // From 1.1 on, the leaves of a repeated subtree are written once, with its first copy.
  const written = treedef.lowerWithLeaves(
    tree,
    { path: `${path}.treedef`, targetMinorVersion: ctx.targetMinorVersion },
    refs,
  );
  return { treedef: written.treedef, leaves: written.leaves.map((j) => refs[j]) };
}

/** Checks specs: a treedef, then one ArraySpec reference per leaf; returns the treedef's facts. */
export function check(message: SpecsMessage | undefined, ctx: CheckContext): treedef.TreeDefFacts {
  const { path, refs, limits, minorVersion } = ctx;
  if (!message) throw new DecodeError(path, "missing", "specs are required");
  if (!message.treedef) throw new DecodeError(`${path}.treedef`, "missing", "specs need a treedef");
  const facts = treedef.check(message.treedef, { path: `${path}.treedef`, limits, minorVersion });
  if (message.leaves.length !== facts.leafCount) {
    throw new DecodeError(
      `${path}.leaves`,
      "invalid-tree",
      `the tree has ${facts.leafCount} leaves, the payload ${message.leaves.length}`,
    );
  }
  const { leaves } = message;
  const { checked, tableSize } = refs;
  for (let i = 0; i < leaves.length; i++) {
    // An ArraySpec entry of the (checked) table passes at once; anything else is resolved
    // again, for the error that says why.
    const ref = leaves[i];
    if (ref < tableSize && ARRAY_SPEC.accepts(checked[ref])) continue;
    refs.require(ref, tableSize, () => `${path}.leaves[${i}]`, ARRAY_SPEC);
  }
  return facts;
}

/** Lifts checked specs; their leaves are the table's ShapeDtypeStruct objects, shared. */
export function lift(message: SpecsMessage, ctx: LiftContext<treedef.TreeDefFacts>): Specs {
  const tree = treedef.lift(message.treedef as NonNullable<SpecsMessage["treedef"]>, ctx);
  // The written leaves are looked up first: a REPEAT's copies are then copies of objects.
  const { objects } = ctx;
  const refs = message.leaves;
  const written = new Array<ShapeDtypeStruct>(refs.length);
  for (let i = 0; i < refs.length; i++) written[i] = objects[refs[i]] as ShapeDtypeStruct;
  return { treedef: tree, leaves: treedef.expandLeaves(written, ctx.facts.leafCopies) };
}
