import type { Value as ValueMessage } from "../../gen/ts/colocated/v1/payload";
import * as treedef from "../entries/treedef";
import { DecodeError, EncodeError } from "../errors";
import type { Value, ValueLeaf } from "../model/value-leaf";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext } from "../table/lower-table";
import * as leafKind from "./value-leaf";

/**
 * Lowers a value (colocated.v1.2): its leaves in leaf order, table objects into the shared
 * table as specs leaves go, then its tree by the specs' writer.
 */
export function lower(value: Value, ctx: LowerContext): ValueMessage {
  const { path, table, targetMinorVersion } = ctx;
  const { treedef: tree, leaves } = value;
  if (leaves.length !== tree.numLeaves) {
    throw new EncodeError(path, `treedef has ${tree.numLeaves} leaves, got ${leaves.length}`);
  }
  const written = leaves.map((leaf, i) =>
    leafKind.lower(leaf, { path: () => `${path}.leaves[${i}]`, table, targetMinorVersion }),
  );
  // No leaf refs: a leaf need not be a table entry, so every leaf counts as distinct, a REPEAT
  // stands only for a subtree without leaves, and every leaf is written.
  const tctx = { path: `${path}.treedef`, targetMinorVersion };
  return { treedef: treedef.lowerWithLeaves(tree, tctx).treedef, leaves: written };
}

/** Checks a value: a treedef, then one leaf per leaf it writes; returns the treedef's facts. */
export function check(message: ValueMessage | undefined, ctx: CheckContext): treedef.TreeDefFacts {
  const { path, limits, minorVersion } = ctx;
  if (!message) throw new DecodeError(path, "missing", "a value payload needs its value");
  if (!message.treedef)
    throw new DecodeError(`${path}.treedef`, "missing", "a value needs a treedef");
  const facts = treedef.check(message.treedef, { path: `${path}.treedef`, limits, minorVersion });
  const { leaves } = message;
  if (leaves.length !== facts.leafCount) {
    throw new DecodeError(
      `${path}.leaves`,
      "invalid-tree",
      `the tree has ${facts.leafCount} leaves, the payload ${leaves.length}`,
    );
  }
  for (let i = 0; i < leaves.length; i++)
    leafKind.check(leaves[i], () => `${path}.leaves[${i}]`, ctx);
  return facts;
}

/** Lifts a checked value; its table objects are the table's, shared. */
export function lift(message: ValueMessage, ctx: LiftContext<treedef.TreeDefFacts>): Value {
  const tree = treedef.lift(message.treedef as NonNullable<ValueMessage["treedef"]>, ctx);
  const written: ValueLeaf[] = message.leaves.map((leaf) => leafKind.lift(leaf, ctx.objects));
  // Another writer may repeat a subtree with leaves: its copies are the leaves it repeats.
  return { treedef: tree, leaves: treedef.expandLeaves(written, ctx.facts.leafCopies) };
}
