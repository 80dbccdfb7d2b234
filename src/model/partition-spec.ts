import { compareCodePoints, ValueObject } from "./value-key";

/** The type of P.UNCONSTRAINED: let the compiler choose this dimension's sharding. */
export class Unconstrained {
  private constructor() {}
  static readonly instance = new Unconstrained();
  toString(): string {
    return "UNCONSTRAINED";
  }
}

/** P.UNCONSTRAINED. */
export const UNCONSTRAINED = Unconstrained.instance;

/** One PartitionSpec entry: None, one axis name, a tuple of axis names, or UNCONSTRAINED. */
export type PartitionSpecEntry = null | string | readonly string[] | Unconstrained;

/** The axis sets a PartitionSpec also carries. */
export interface PartitionSpecOptions {
  unreduced?: Iterable<string>;
  reduced?: Iterable<string>;
}

function canonicalEntry(entry: PartitionSpecEntry): PartitionSpecEntry {
  if (!Array.isArray(entry)) return entry;
  if (entry.length === 0) return null;
  return entry.length === 1 ? entry[0] : Object.freeze([...entry]);
}

/** jax.sharding.PartitionSpec: how each array dimension maps onto mesh axes. */
export class PartitionSpec extends ValueObject {
  readonly entries: readonly PartitionSpecEntry[];
  /** Sorted by code point. */
  readonly unreduced: readonly string[];
  /** Sorted by code point. */
  readonly reduced: readonly string[];

  /** As in JAX, a one-axis tuple is that axis and an empty tuple is None. */
  constructor(...entries: PartitionSpecEntry[]) {
    super();
    this.entries = Object.freeze(entries.map(canonicalEntry));
    this.unreduced = [];
    this.reduced = [];
  }

  /** A spec with unreduced and reduced axes, like P(*entries, unreduced=..., reduced=...). */
  static create(
    entries: readonly PartitionSpecEntry[],
    options: PartitionSpecOptions = {},
  ): PartitionSpec {
    const spec = new PartitionSpec(...entries);
    const sorted = (axes?: Iterable<string>) =>
      Object.freeze([...new Set(axes ?? [])].sort(compareCodePoints));
    Object.assign(spec, { unreduced: sorted(options.unreduced), reduced: sorted(options.reduced) });
    return spec;
  }

  /** The axis names of the entries, in order, repeats included. */
  get partitionAxes(): string[] {
    return this.entries.flatMap((e) => (typeof e === "string" ? [e] : Array.isArray(e) ? e : []));
  }

  // The JSON of [entries, unreduced, reduced] (UNCONSTRAINED as {"u":1}), written by hand: a
  // program that makes a sharding per leaf computes one per leaf, twice as fast as this way.
  protected computeKey(): string {
    let out = "P([[";
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i];
      if (i > 0) out += ",";
      out += e === null ? "null" : e === UNCONSTRAINED ? '{"u":1}' : JSON.stringify(e);
    }
    return `${out}],${axesJson(this.unreduced)},${axesJson(this.reduced)}])`;
  }
}

function axesJson(axes: readonly string[]): string {
  return axes.length === 0 ? "[]" : JSON.stringify(axes);
}
