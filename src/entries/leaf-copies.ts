import { SpecsSchema } from "../../gen/es/colocated/v1/payload_pb";
import { DecodeError } from "../errors";
import { fieldSince, requireVersion } from "../schema-version";
import { varintSize } from "../wire-sizes";
import { expandLeaves } from "./tree-repeats";

/**
 * Leaf copies (colocated.v1.3): a specs tree's leaf references written with each run that
 * repeats earlier ones as one copy, three numbers: the written leaves before it (after the copy
 * before it), how far back it starts, how many leaves it makes. A copy reads the leaves made so
 * far one at a time, so one that overlaps what it makes repeats a cycle. Python:
 * entries/leaf_copies.py, which finds the same copies.
 */

/** The minor version that introduced leaf copies. */
export const LEAF_COPIES_SINCE = fieldSince(SpecsSchema.field.leafCopies);

/** The shortest run a copy makes: the writer looks runs up by their first MIN_COPY leaves. */
export const MIN_COPY = 4;

/** Leaf references as written: the ones no copy makes, and the copies. */
export interface WrittenLeaves {
  leaves: number[];
  copies: number[];
}

/**
 * The references written as leaves and copies: walking the references, each run of at least
 * MIN_COPY that starts as the latest earlier run seen with the same first MIN_COPY references
 * (runs inside a copy are not seen) becomes a copy, as long as the two agree, when its three
 * numbers (and, for the first, the field's tag and length) take fewer bytes than the references
 * it makes. Both languages find the same copies.
 */
export function findLeafCopies(refs: readonly number[]): WrittenLeaves {
  const n = refs.length;
  const leaves: number[] = [];
  const copies: number[] = [];
  if (n <= MIN_COPY) return { leaves: refs.slice(), copies };
  const bits = 32 - Math.clz32(n);
  const mask = (1 << bits) - 1;
  // latest[h] is 1 + the latest run seen whose first references hash to h; before[i] is the one
  // seen before run i with the same hash (so each chain runs from the latest back).
  const latest = new Int32Array(mask + 1);
  const before = new Int32Array(n);
  let gap = 0;
  let i = 0;
  while (i + MIN_COPY <= n) {
    const a = refs[i];
    const b = refs[i + 1];
    const c = refs[i + 2];
    const d = refs[i + 3];
    const h = hashRun(a, b, c, d) >>> (32 - bits);
    let p = latest[h] - 1;
    while (
      p >= 0 &&
      !(refs[p] === a && refs[p + 1] === b && refs[p + 2] === c && refs[p + 3] === d)
    )
      p = before[p] - 1;
    before[i] = latest[h];
    latest[h] = i + 1;
    if (p >= 0) {
      let length = MIN_COPY;
      while (i + length < n && refs[p + length] === refs[i + length]) length++;
      const field = copies.length === 0 ? FIELD_BYTES : 0;
      if (worthCopying(refs, i, length, field + sizeOfCopy(gap, i - p, length))) {
        copies.push(gap, i - p, length);
        gap = 0;
        i += length;
        continue;
      }
    }
    leaves.push(a);
    gap++;
    i++;
  }
  while (i < n) leaves.push(refs[i++]);
  return { leaves, copies };
}

/** A hash of a run's first MIN_COPY references (only to find runs fast: equal runs decide). */
function hashRun(a: number, b: number, c: number, d: number): number {
  const h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b);
  return (Math.imul(h ^ Math.imul(c, 0xc2b2ae35), 0x27d4eb2f) ^ Math.imul(d, 0x165667b1)) >>> 0;
}

/**
 * What the first copy adds on top of its numbers: `leaf_copies`' tag and (for the few copies a
 * payload has) its one-byte length.
 */
const FIELD_BYTES = 2;

/** The bytes a copy's three numbers take. */
function sizeOfCopy(gap: number, distance: number, count: number): number {
  return varintSize(gap) + varintSize(distance) + varintSize(count);
}

/** Whether a copy that costs `cost` bytes takes fewer than the references it makes. */
function worthCopying(refs: readonly number[], at: number, length: number, cost: number): boolean {
  if (cost < length) return true; // every reference takes a byte at least
  let saved = 0;
  for (let j = at; j < at + length; j++) saved += varintSize(refs[j]);
  return cost < saved;
}

/**
 * Checks a Specs' leaf copies against its written leaves and the leaves its tree takes, before
 * any is made: three numbers per copy, each copy after written leaves that are there, reaching
 * back to a leaf made before it, making at least one leaf, and all making exactly `leafCount`
 * (without copies, the written leaves are the tree's).
 */
export function checkLeafCopies(
  copies: readonly number[],
  written: number,
  leafCount: number,
  path: string,
  minorVersion: number,
): void {
  if (copies.length === 0) {
    if (written === leafCount) return;
    const detail = `the tree has ${leafCount} leaves, the payload ${written}`;
    throw new DecodeError(`${path}.leaves`, "invalid-tree", detail);
  }
  const at = `${path}.leaf_copies`;
  requireVersion(at, "leaf copies", LEAF_COPIES_SINCE, minorVersion);
  if (copies.length % 3 !== 0) {
    throw new DecodeError(at, "invalid-tree", `${copies.length} numbers, three per copy`);
  }
  let read = 0;
  let made = 0;
  for (let c = 0; c < copies.length; c += 3) {
    const gap = copies[c];
    const distance = copies[c + 1];
    const count = copies[c + 2];
    if (gap > written - read) {
      const detail = `copy ${c / 3} follows ${gap} written leaves; ${written - read} are left`;
      throw new DecodeError(`${at}[${c}]`, "invalid-tree", detail);
    }
    read += gap;
    made += gap;
    if (distance === 0) {
      const detail = `copy ${c / 3} starts at the leaf it makes first`;
      throw new DecodeError(`${at}[${c + 1}]`, "forward-reference", detail);
    }
    if (distance > made) {
      const detail = `copy ${c / 3} starts ${distance} leaves back from leaf ${made}`;
      throw new DecodeError(`${at}[${c + 1}]`, "reference-out-of-range", detail);
    }
    if (count === 0) {
      throw new DecodeError(`${at}[${c + 2}]`, "invalid-tree", `copy ${c / 3} makes no leaves`);
    }
    made += count;
    if (made + (written - read) > leafCount) {
      const detail = `the leaves pass the tree's ${leafCount} at copy ${c / 3}`;
      throw new DecodeError(`${at}[${c + 2}]`, "invalid-tree", detail);
    }
  }
  made += written - read;
  if (made !== leafCount) {
    const detail = `the tree has ${leafCount} leaves, the payload ${made} (${written} written, ${made - written} copied)`;
    throw new DecodeError(`${path}.leaves`, "invalid-tree", detail);
  }
}

/**
 * The leaves made: the written ones with every (checked) copy expanded, as a REPEAT's leaves
 * are (`expandLeaves` reads each copy as the written leaves before it, where its leaves start,
 * and how many; it copies one at a time, so an overlapping copy repeats its cycle).
 */
export function expandLeafCopies<T>(written: readonly T[], copies: readonly number[]): T[] {
  if (copies.length === 0) return written as T[];
  const at = new Array<number>(copies.length);
  let read = 0;
  let made = 0;
  for (let c = 0; c < copies.length; c += 3) {
    read += copies[c];
    made += copies[c];
    at[c] = read;
    at[c + 1] = made - copies[c + 1];
    at[c + 2] = copies[c + 2];
    made += copies[c + 2];
  }
  return expandLeaves(written, at);
}
