import { DecodeError } from "../errors";
import type { SharedObject } from "../model/program";

/** A check that a referenced object is of an accepted kind, with a name for messages. */
export interface Accepts<T extends SharedObject> {
  name: string;
  test: (object: SharedObject) => object is T;
}

/** A path, or a function that makes it: leaves are many, and their paths matter only on failure. */
export type LazyPath = string | (() => string);

const pathOf = (path: LazyPath) => (typeof path === "string" ? path : path());

/**
 * Resolves table references while the table is lifted in one forward pass: a reference must
 * be in range, point backwards, and land on an entry of the kind its field expects.
 */
export class References {
  constructor(
    /** The objects lifted so far, one per entry. */
    readonly lifted: readonly SharedObject[],
    /** How many entries the table has in all. */
    readonly tableSize: number,
  ) {}

  /** Resolves a required reference held by entry `from` (or by the payload when `from` is the table size). */
  require<T extends SharedObject>(
    ref: number | undefined,
    from: number,
    path: LazyPath,
    accepts: Accepts<T>,
  ): T {
    if (ref === undefined)
      throw new DecodeError(pathOf(path), "missing", `a ${accepts.name} reference is required`);
    return this.resolve(ref, from, path, accepts);
  }

  /** Resolves an optional reference; absent stays undefined. */
  optional<T extends SharedObject>(
    ref: number | undefined,
    from: number,
    path: LazyPath,
    accepts: Accepts<T>,
  ): T | undefined {
    return ref === undefined ? undefined : this.resolve(ref, from, path, accepts);
  }

  private resolve<T extends SharedObject>(
    ref: number,
    from: number,
    path: LazyPath,
    accepts: Accepts<T>,
  ): T {
    if (ref >= this.tableSize) {
      throw new DecodeError(
        pathOf(path),
        "reference-out-of-range",
        `reference ${ref} is past the end of a table of ${this.tableSize} entries`,
      );
    }
    if (ref >= from) {
      throw new DecodeError(
        pathOf(path),
        "forward-reference",
        `entry ${from} refers to entry ${ref}, which is not before it`,
      );
    }
    const target = this.lifted[ref];
    if (!accepts.test(target)) {
      throw new DecodeError(
        pathOf(path),
        "wrong-entry-kind",
        `entry ${ref} is a ${target.constructor.name}, not a ${accepts.name}`,
      );
    }
    return target;
  }
}
