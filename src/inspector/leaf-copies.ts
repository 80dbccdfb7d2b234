import type { Specs } from "../../gen/ts/colocated/v1/payload";
import { packedFieldSize } from "../wire-sizes";

/**
 * How a tree's leaves are written when some are leaf copies (1.3, `Specs.leaf_copies`): the
 * leaves written one by one, the copies, and the leaves the tree's REPEATs (1.1) make, which
 * the leaf list leaves out.
 */
export interface LeafCopiesView {
  /** The tree's leaves, a REPEAT's included. */
  leaves: number;
  /** The leaf references written one by one (`Specs.leaves`). */
  written: number;
  /** The copies (`Specs.leaf_copies`, three numbers each). */
  copies: number;
  /** The leaves the copies make. */
  copied: number;
  /** The leaves the tree's REPEATs make (none of them in the leaf list). */
  repeated: number;
  /** The bytes `leaves` and `leaf_copies` take on the wire, tags and lengths included. */
  bytes: number;
}

/**
 * How a decoded payload's specs write their leaves, given the tree's leaf count (REPEATs'
 * included); undefined for specs without leaf copies.
 */
export function leafCopiesView(specs: Specs, leaves: number): LeafCopiesView | undefined {
  const { leafCopies } = specs;
  if (leafCopies.length === 0) return undefined;
  const written = specs.leaves.length;
  let copied = 0;
  for (let c = 2; c < leafCopies.length; c += 3) copied += leafCopies[c];
  const bytes = packedFieldSize(specs.leaves) + packedFieldSize(leafCopies);
  return {
    leaves,
    written,
    copies: leafCopies.length / 3,
    copied,
    repeated: leaves - written - copied,
    bytes,
  };
}

/**
 * A tree's leaves in one line: "10,000 leaves as 16 written and 1 copy", or with REPEATs
 * "91 leaves as 8 written, 5 copies and 10 in the tree's repeats".
 */
export function describeLeafCopies(view: LeafCopiesView): string {
  const written = `${view.written.toLocaleString("en-US")} written`;
  const copies = counted(view.copies, "copy", "copies");
  const how = view.repeated
    ? `${written}, ${copies} and ${view.repeated.toLocaleString("en-US")} in the tree's repeats`
    : `${written} and ${copies}`;
  return `${counted(view.leaves, "leaf", "leaves")} as ${how}`;
}

/** 10000 leaves as "10,000 leaves", 1 as "1 leaf". */
function counted(n: number, one: string, many: string): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}
