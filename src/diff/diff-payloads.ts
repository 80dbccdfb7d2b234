/**
 * Why two payloads differ: a worker caches a program by the SHA-256 of its bytes, so one
 * changed byte specializes again. Both are decoded, their trees walked side by side once, and
 * each pair of facing leaves compared by its entries' values once; what differs is gathered
 * by cause. Python: diff/diff_payloads.py (`colocated_wire.diff`).
 */
import { DecodeError } from "../errors";
import { EntryComparison, sameNumbers } from "./compare-entries";
import { Groups, type LocatedGroup } from "./groups";
import { LeafRuns } from "./leaf-runs";
import {
  devicesCauses,
  functionCause,
  headerCause,
  partCause,
  writerCause,
} from "./payload-causes";
import { DIFF_VERSION, type PayloadDiff } from "./payload-diff";
import { type DiffSide, readSide } from "./read-side";
import { walkTrees } from "./tree-walk";

/** A payload the diff could not read, or not of the other's kind: which one, and why. */
export class DiffInputError extends Error {
  override readonly name = "DiffInputError";

  constructor(
    /** "a" or "b": the first or the second payload. */
    readonly input: "a" | "b",
    override readonly cause: DecodeError,
  ) {
    super(`${input}: ${cause.message}`);
  }
}

/** Compares two payloads of one kind; a payload that does not decode is a DiffInputError. */
export function diffPayloads(a: Uint8Array, b: Uint8Array): PayloadDiff {
  return diffInDetail(a, b).diff;
}

/** A diff with what the inspector page draws it from: both sides, and where each group lies. */
export interface DetailedDiff {
  diff: PayloadDiff;
  sides: readonly [DiffSide, DiffSide];
  /** By group, as `diff.groups`: its places and leaves in A's tree, and its first leaves. */
  located: LocatedGroup[];
}

/** `diffPayloads`, with the sides and the groups' places kept for the inspector page. */
export function diffInDetail(a: Uint8Array, b: Uint8Array): DetailedDiff {
  const same = sameNumbers(a, b);
  const sideA = read(a, "a");
  const sideB = same ? sideA : read(b, "b");
  if (sideA.kind !== sideB.kind) {
    const detail = `this is a ${sideB.kind} payload, not a ${sideA.kind} payload`;
    throw new DiffInputError("b", new DecodeError("header.kind", "wrong-payload-kind", detail));
  }
  const diff: PayloadDiff = {
    version: DIFF_VERSION,
    kind: sideA.kind,
    same,
    equal: true,
    bytes: { a: a.length, b: b.length },
    leaves: { a: leafCount(sideA), b: leafCount(sideB) },
    differingLeaves: 0,
    groups: [],
  };
  const sides = [sideA, sideB] as const;
  if (same) return { diff, sides, located: [] };
  const { groups, differingLeaves } = compareSides(sideA, sideB);
  const found = groups.finish();
  const result = { ...diff, equal: found.length === 0, differingLeaves, groups: found };
  return { diff: result, sides, located: groups.located() };
}

/** The differences of two sides of one kind, in the order of the payload's fields. */
function compareSides(a: DiffSide, b: DiffSide): { groups: Groups; differingLeaves: number } {
  const groups = new Groups();
  const entries = new EntryComparison(a, b);
  const runs = new LeafRuns(entries);
  let differingLeaves = 0;
  const header = headerCause(a, b);
  if (header) groups.add(header, null, 0);
  const writer = writerCause(a, b);
  if (writer) groups.add(writer, null, 0);
  if (a.kind === "program") {
    const fn = functionCause(a, b, entries);
    if (fn) groups.add(fn, null, 0);
    for (const cause of devicesCauses(a, b, entries)) groups.add(cause, null, 0);
  }
  const names = [...new Set([...a.parts, ...b.parts].map((p) => p.name))];
  for (const name of names) {
    const pa = a.parts.find((p) => p.name === name);
    const pb = b.parts.find((p) => p.name === name);
    if (!pa || !pb) {
      const leaves = (pa ?? pb)?.leafRefs.length ?? 0;
      groups.add(partCause(name, pa !== undefined, leaves), null, leaves);
      differingLeaves += leaves;
      continue;
    }
    const refsA = pa.leafRefs;
    const refsB = pb.leafRefs;
    const compare =
      a.kind === "value"
        ? (ra: number, rb: number) => entries.valueLeaves(ra, rb)
        : (ra: number, rb: number) => entries.arraySpecs(ra, rb);
    walkTrees(name, pa.root, pb.root, refsA.length, {
      node(cause, place, leaves) {
        groups.add(cause, place, leaves);
        differingLeaves += leaves;
      },
      leaf(ia, ib, parent, container, index) {
        const causes = compare(refsA[ia], refsB[ib]);
        if (causes.length === 0) return;
        differingLeaves++;
        for (const cause of causes) groups.addLeaf(cause, parent, container, index, ia, ib);
      },
      leaves(ia, ib, from, count, parent, container) {
        // A value's leaves that are no table entries have no entry to pair: one at a time.
        if (a.kind === "value") {
          for (let k = 0; k < count; k++) this.leaf(ia + k, ib + k, parent, container, from + k);
          return;
        }
        const found = runs.differing(refsA, ia, refsB, ib, from, count);
        differingLeaves += found.leaves;
        for (const { cause, indices, first } of found.causes) {
          groups.addLeaves(cause, parent, container, indices, ia + first, ib + first);
        }
      },
    });
  }
  return { groups, differingLeaves };
}

function read(bytes: Uint8Array, input: "a" | "b"): DiffSide {
  try {
    return readSide(bytes);
  } catch (error) {
    if (error instanceof DecodeError) throw new DiffInputError(input, error);
    throw error;
  }
}

function leafCount(side: DiffSide): number {
  return side.parts.reduce((sum, part) => sum + part.leafRefs.length, 0);
}
