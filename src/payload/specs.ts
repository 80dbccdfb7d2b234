import type { Specs as SpecsMessage } from "../../gen/ts/colocated/v1/payload";
import { ARRAY_SPEC } from "../entries/array-spec";
import {
  checkLeafCopies,
  expandLeafCopies,
  findLeafCopies,
  LEAF_COPIES_SINCE,
} from "../entries/leaf-copies";
import * as treedef from "../entries/treedef";
import { DecodeError, EncodeError } from "../errors";
import type { Specs } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { settled } from "../settled";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext } from "../table/lower-table";

/** Specs as lowering reads them: a caller's leaves are not copied. */
type ReadonlySpecs = {
  readonly treedef: Specs["treedef"];
  readonly leaves: readonly ShapeDtypeStruct[];
};

/** Lowers a specs pytree: its leaves go into the shared table, the structure into columns. */
export function lower(specs: ReadonlySpecs, ctx: LowerContext): SpecsMessage {
  const { path, table } = ctx;
  const { treedef: tree, leaves } = specs;
  if (leaves.length !== tree.numLeaves) {
    throw new EncodeError(path, `treedef has ${tree.numLeaves} leaves, got ${leaves.length}`);
  }
  // One path for every leaf, read only for an error, while its leaf is added (`at` is an
  // object: a loop counter a closure captured would live on the heap).
  const refs = new Array<number>(leaves.length);
  const at = { leaf: 0 };
  const leafPath = () => `${path}.leaves[${at.leaf}]`;
  for (let i = 0; i < leaves.length; i++) {
    const leaf = leaves[i];
    at.leaf = i;
    if (!(leaf instanceof ShapeDtypeStruct)) {
      throw new EncodeError(leafPath(), "a spec leaf must be a ShapeDtypeStruct");
    }
    refs[i] = table.add(leaf, leafPath);
  }
  // From 1.1 on, the leaves of a repeated subtree are written once, with its first copy.
  const written = treedef.lowerWithLeaves(
    tree,
    { path: `${path}.treedef`, targetMinorVersion: ctx.targetMinorVersion },
    refs,
  );
  // The same written leaves (lowerWithLeaves gives the array again for the same tree, target
  // and leaf refs) make the same message, kept settled with them.
  let message = WRITTEN_SPECS.get(written.leaves);
  if (message === undefined) {
    // Leaves are written in order: when none is left out, they are all of them.
    const writtenRefs =
      written.leaves.length === refs.length ? refs : written.leaves.map((j) => refs[j]);
    // From 1.3 on, a run of leaves that repeats earlier ones is written as a copy.
    const copied =
      ctx.targetMinorVersion < LEAF_COPIES_SINCE
        ? { leaves: writtenRefs, copies: [] }
        : findLeafCopies(writtenRefs);
    message = settled({
      treedef: written.treedef,
      leaves: copied.leaves,
      leafCopies: copied.copies,
    });
    WRITTEN_SPECS.set(written.leaves, message);
  }
  return message;
}

/** The specs message made for a tree's written leaves (held weakly by that array). */
const WRITTEN_SPECS = new WeakMap<readonly number[], SpecsMessage>();

/**
 * Checks specs: a treedef, then its leaves, each written one an ArraySpec reference (a copy
 * makes leaves of those); returns the treedef's facts.
 */
export function check(message: SpecsMessage | undefined, ctx: CheckContext): treedef.TreeDefFacts {
  const { path, refs, limits, minorVersion } = ctx;
  if (!message) throw new DecodeError(path, "missing", "specs are required");
  if (!message.treedef) throw new DecodeError(`${path}.treedef`, "missing", "specs need a treedef");
  const facts = treedef.check(message.treedef, { path: `${path}.treedef`, limits, minorVersion });
  const { leaves } = message;
  checkLeafCopies(message.leafCopies, leaves.length, facts.leafCount, path, minorVersion);
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
  const made = expandLeafCopies(written, message.leafCopies);
  return { treedef: tree, leaves: treedef.expandLeaves(made, ctx.facts.leafCopies) };
}

/**
 * Every leaf's ArraySpec reference of checked specs: leaf copies (1.3) made, then the tree's
 * REPEATs (1.1). Python: payload/specs.py's leaf_refs.
 */
export function leafRefs(message: SpecsMessage, facts: treedef.TreeDefFacts): number[] {
  return treedef.expandLeaves(
    expandLeafCopies(message.leaves, message.leafCopies),
    facts.leafCopies,
  );
}
