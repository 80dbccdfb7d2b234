import type { Entry } from "../../gen/ts/colocated/v1/table";
import { kindName } from "../entries";
import { DecodeError } from "../errors";

/** An entry's kind: the case of its `kind` oneof, undefined for a kind of a newer version. */
export type EntryKind = NonNullable<Entry["kind"]>["$case"] | undefined;

/** A checked entry: its kind, its message (the oneof's value) and the facts its check returned. */
export interface Checked<M = unknown, F = unknown> {
  readonly entry: Entry;
  readonly kind: EntryKind;
  readonly message: M;
  readonly facts: F;
}

/** The kinds a reference field accepts, with a name for messages. */
export interface Accepts<M, F> {
  readonly name: string;
  accepts(checked: Checked): checked is Checked<M, F>;
}

/** A path, or a function that makes it: leaves are many, and their paths matter only on failure. */
export type LazyPath = string | (() => string);

const pathOf = (path: LazyPath) => (typeof path === "string" ? path : path());

/**
 * Resolves table references while the table is checked in one forward pass: a reference must
 * be in range, point backwards, and land on an entry of a kind its field accepts. The kind
 * is read from the referenced entry's oneof case.
 */
export class References {
  constructor(
    /** The entries checked so far, one per index. */
    readonly checked: readonly Checked[],
    /** How many entries the table has in all. */
    readonly tableSize: number,
  ) {}

  /** Resolves a required reference held by entry `from` (or by the payload when `from` is the table size). */
  require<M, F>(
    ref: number | undefined,
    from: number,
    path: LazyPath,
    accepts: Accepts<M, F>,
  ): Checked<M, F> {
    if (ref === undefined)
      throw new DecodeError(pathOf(path), "missing", `a ${accepts.name} reference is required`);
    return this.resolve(ref, from, path, accepts);
  }

  /** Resolves an optional reference; absent stays undefined. */
  optional<M, F>(
    ref: number | undefined,
    from: number,
    path: LazyPath,
    accepts: Accepts<M, F>,
  ): Checked<M, F> | undefined {
    return ref === undefined ? undefined : this.resolve(ref, from, path, accepts);
  }

  private resolve<M, F>(
    ref: number,
    from: number,
    path: LazyPath,
    accepts: Accepts<M, F>,
  ): Checked<M, F> {
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
    const target = this.checked[ref];
    if (!accepts.accepts(target)) {
      throw new DecodeError(
        pathOf(path),
        "wrong-entry-kind",
        `entry ${ref} is a ${kindName(target.kind)}, not a ${accepts.name}`,
      );
    }
    return target;
  }
}
