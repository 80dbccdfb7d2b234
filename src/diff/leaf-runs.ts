/**
 * A run of sibling leaves (a list of arrays) compared by their pairs of entries, in one pass:
 * a leaf costs two reads and a typed-array look-up of its pair, each distinct pair is compared
 * once (when its first leaf comes), and only a leaf of a pair that differs is noted, then
 * handed to the lists of its pair's causes. So 10,000 leaves on 16 pairs are 16 comparisons
 * and one pass over their references. Python: the same columns in numpy (diff_payloads.py).
 */
import type { EntryComparison } from "./compare-entries";
import type { Cause } from "./groups";

/** The leaves of a run that one cause covers. */
export interface CauseLeaves {
  /** The cause as the first pair that has it found it (equal keys, one group). */
  cause: Cause;
  /** The leaves' indices among their container's children, in order. */
  indices: Int32Array;
  /** The first of them, as an offset into the run. */
  first: number;
}

/** What differs in a run: its causes in the order their first leaves come, and how many leaves differ. */
export interface RunDifferences {
  causes: CauseLeaves[];
  leaves: number;
}

const NO_DIFFERENCES: RunDifferences = { causes: [], leaves: 0 };

// A pair's slot while a run is read: not met yet, met and equal, or (above 0) its number
// among the run's differing pairs, plus one.
const UNMET = 0;
const EQUAL = -1;

/**
 * The columns a run's differing leaves are noted in, in order: each one's child index and its
 * pair. Shared by every run (one is read at a time, and its columns are read before the next),
 * and grown to the longest run met, never made per run.
 */
let scratch = { leafAt: new Int32Array(0), pairAt: new Int32Array(0) };

/** The columns, at least `count` long. */
function columns(count: number): { leafAt: Int32Array; pairAt: Int32Array } {
  if (scratch.leafAt.length < count) {
    scratch = { leafAt: new Int32Array(count), pairAt: new Int32Array(count) };
  }
  return scratch;
}

/** The runs of one comparison: the pairs' causes come from, and stay remembered by, `entries`. */
export class LeafRuns {
  readonly #width: number;
  /**
   * The pairs met in the current run, by key (refA * width + refB), emptied after each run: in
   * a typed array when the tables are small (they are: a few shardings and specs), else a map.
   */
  readonly #dense: Int32Array | undefined;
  readonly #sparse = new Map<number, number>();

  constructor(readonly entries: EntryComparison) {
    this.#width = entries.b.objects.length + 1;
    const pairs = (entries.a.objects.length + 1) * this.#width;
    if (pairs <= 1 << 16) this.#dense = new Int32Array(pairs);
  }

  /**
   * What differs in a run: leaf `ia + k` of A (its entry `refsA[ia + k]`) faces `ib + k` of B,
   * as child `from + k`, for k < `count`.
   */
  differing(
    refsA: ArrayLike<number>,
    ia: number,
    refsB: ArrayLike<number>,
    ib: number,
    from: number,
    count: number,
  ): RunDifferences {
    const { leafAt, pairAt } = columns(count);
    // By differing pair, in the order of their first leaves: its causes.
    const pairs: Cause[][] = [];
    const met: number[] = [];
    const dense = this.#dense;
    const sparse = this.#sparse;
    const width = this.#width;
    let n = 0;
    for (let k = 0; k < count; k++) {
      const ra = refsA[ia + k];
      const rb = refsB[ib + k];
      const key = ra * width + rb;
      let slot = dense ? dense[key] : (sparse.get(key) ?? UNMET);
      if (slot === UNMET) {
        slot = this.#meet(ra, rb, pairs);
        if (dense) dense[key] = slot;
        else sparse.set(key, slot);
        met.push(key);
      }
      if (slot === EQUAL) continue;
      leafAt[n] = from + k;
      pairAt[n++] = slot - 1;
    }
    if (dense) for (const key of met) dense[key] = UNMET;
    else sparse.clear();
    if (n === 0) return NO_DIFFERENCES;
    return { causes: leavesByCause(pairs, leafAt, pairAt, n, from), leaves: n };
  }

  /** A pair met for the first time, compared: its slot, and its causes if it differs. */
  #meet(ra: number, rb: number, pairs: Cause[][]): number {
    const causes = this.entries.arraySpecs(ra, rb);
    return causes.length === 0 ? EQUAL : pairs.push(causes);
  }
}

/**
 * Each cause of a run's differing pairs, in the order the pairs came, with its leaves: of the
 * run's `n` differing leaves (child `leafAt[i]`, facing pair `pairAt[i]`), those whose pair
 * has it.
 */
function leavesByCause(
  pairs: readonly Cause[][],
  leafAt: Int32Array,
  pairAt: Int32Array,
  n: number,
  from: number,
): CauseLeaves[] {
  return pairsByCause(pairs).map(({ cause, has, count }) => {
    // A cause of every differing pair covers every differing leaf (the usual case: one cause).
    const indices = count === pairs.length ? leafAt.slice(0, n) : leavesOf(has, leafAt, pairAt, n);
    return { cause, indices, first: indices[0] - from };
  });
}

/** Of `n` differing leaves, the children of those whose pair `has` marks. */
function leavesOf(has: Uint8Array, leafAt: Int32Array, pairAt: Int32Array, n: number): Int32Array {
  let size = 0;
  for (let i = 0; i < n; i++) size += has[pairAt[i]];
  const out = new Int32Array(size);
  for (let i = 0, j = 0; j < size; i++) if (has[pairAt[i]] === 1) out[j++] = leafAt[i];
  return out;
}

/**
 * The causes of differing pairs by key (two pairs that differ alike share one), in the order
 * the pairs came: which pairs have each (`has[pair]` is 1), and how many.
 */
function pairsByCause(
  pairs: readonly Cause[][],
): { cause: Cause; has: Uint8Array; count: number }[] {
  const byKey = new Map<string, { cause: Cause; has: Uint8Array; count: number }>();
  pairs.forEach((causes, pair) => {
    for (const cause of causes) {
      let found = byKey.get(cause.key);
      if (!found) {
        found = { cause, has: new Uint8Array(pairs.length), count: 0 };
        byKey.set(cause.key, found);
      }
      found.has[pair] = 1;
      found.count++;
    }
  });
  return [...byKey.values()];
}
