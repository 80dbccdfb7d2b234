/**
 * A run of sibling leaves (a list of arrays) sorted by pair of entries in one pass: a leaf
 * costs two reads and a look-up, and what differs is handed on once per pair with its leaves,
 * never once per leaf, so a diff of 10,000 leaves costs little beside decoding them.
 */
import type { EntryComparison } from "./compare-entries";
import type { Cause } from "./groups";

/** The leaves of a run that face one pair of entries, and how that pair differs. */
export interface PairLeaves {
  causes: Cause[];
  /** The leaves' indices among their container's children, in order. */
  indices: number[];
}

interface Bucket extends PairLeaves {
  key: number;
}

/** The buckets of a run, by pair of entries: in an array when the tables are small. */
export class LeafRuns {
  readonly #width: number;
  readonly #dense: (Bucket | undefined)[] | undefined;
  readonly #sparse = new Map<number, Bucket>();

  constructor(readonly entries: EntryComparison) {
    this.#width = entries.b.objects.length + 1;
    const pairs = (entries.a.objects.length + 1) * this.#width;
    if (pairs <= 1 << 16) this.#dense = new Array(pairs);
  }

  /**
   * The differing leaves of a run, by pair, in the order each pair's first leaf comes: leaf
   * `ia + k` of A (its entry `refsA[ia + k]`) faces `ib + k` of B, as child `from + k`.
   */
  differing(
    refsA: ArrayLike<number>,
    ia: number,
    refsB: ArrayLike<number>,
    ib: number,
    from: number,
    count: number,
  ): PairLeaves[] {
    const out: Bucket[] = [];
    const touched: Bucket[] = [];
    const dense = this.#dense;
    const width = this.#width;
    for (let k = 0; k < count; k++) {
      const ra = refsA[ia + k];
      const rb = refsB[ib + k];
      const key = ra * width + rb;
      let bucket = dense ? dense[key] : this.#sparse.get(key);
      if (bucket === undefined) {
        const causes = this.entries.arraySpecs(ra, rb);
        bucket = { key, causes, indices: [] };
        if (dense) dense[key] = bucket;
        else this.#sparse.set(key, bucket);
        touched.push(bucket);
        if (causes.length > 0) out.push(bucket);
      }
      if (bucket.causes.length > 0) bucket.indices.push(from + k);
    }
    // The buckets are the run's own; the pairs' causes stay remembered by the comparison.
    for (const { key } of touched) {
      if (dense) dense[key] = undefined;
      else this.#sparse.delete(key);
    }
    return out;
  }
}
