import { Entry } from "../../gen/ts/colocated/v1/table";
import { codecOf, type EntryCodec } from "../entries";
import { EncodeError } from "../errors";
import type { SharedObject } from "../model/program";
import { UnknownEntry } from "../model/unknown-entry";
import { ValueObject } from "../model/value-key";
import { entryOrigin } from "../provenance";
import { settled } from "../settled";
import { graftUnknownFields } from "../unknown-fields";
import { SCHEMA_MINOR_VERSION } from "../version";
import { tableSlot } from "./table-slots";

/**
 * An object's path in the model, or how to build it: a path is read only for an EncodeError,
 * so a leaf's is built only then (building one per leaf cost as much as lowering it).
 */
export type ModelPath = string | (() => string);

/** A table that lowering adds dependencies to: the TableBuilder, or one that inlines them. */
export interface LowerTable {
  /** Adds an object (and what it refers to) and returns its table index. */
  add(object: SharedObject, path: ModelPath): number;
  /** The entries so far, in index order. */
  readonly entries: readonly Entry[];
}

/**
 * Where an entry's lowering runs: its path in the model, the table it adds dependencies to,
 * and the minor version the payload targets.
 */
export interface LowerContext {
  /** The object's path in the model, for EncodeError. */
  readonly path: string;
  readonly table: LowerTable;
  /** The minor version of colocated.v1 the reader reads: nothing newer may be written. */
  readonly targetMinorVersion: number;
}

/**
 * What the table dedups an object by: a scope, the index of the entry it refers to (-1 for
 * none), and a key of its own fields within that scope. So a key stays short however large
 * the mesh below it.
 */
export type ValueKey = readonly [scope: number, key: string];

/** How many tables have been made: each takes the next number. */
let tables = 0;

/**
 * Collects the shared objects of one payload into table entries, each equal value once.
 * An object is appended after its dependencies (post-order), so entries only refer backwards;
 * the first encounter fixes its index, which makes the table order canonical. A new value is
 * checked and lowered once, by its entry module's `lower`.
 */
export class TableBuilder implements LowerTable {
  /** The entries, in index order. */
  readonly entries: Entry[] = [];
  /** The model object each entry was lowered from. */
  readonly objects: SharedObject[] = [];
  // By kind (the codec, or UnknownEntry), then scope, then key.
  readonly #byValue = new Map<unknown, Map<number, Map<string, number>>>();
  /** This table's number, by which a value's slot notes its entry here (table-slots.ts). */
  readonly #serial = ++tables;
  #lastKind: unknown;
  #lastScopes: Map<number, Map<string, number>> | undefined;

  /** A table for a payload of this minor version. */
  constructor(readonly targetMinorVersion: number = SCHEMA_MINOR_VERSION) {}

  /** Adds an object (and what it refers to) and returns its table index. */
  add(object: SharedObject, path: ModelPath): number {
    // A value met before, through this object or an equal one, is found by the entry noted in
    // its slot (table-slots.ts): a Map keyed by every object cost about 100 ns an object.
    if (!(object instanceof ValueObject)) return this.#lower(object, path);
    const slot = tableSlot(object);
    if (slot.serial === this.#serial) return slot.entry;
    const index = this.#lower(object, path);
    slot.serial = this.#serial;
    slot.entry = index;
    return index;
  }

  #lower(object: SharedObject, path: ModelPath): number {
    const ctx = new Context(path, this);
    const codec = codecOf(object);
    if (codec) {
      const [scope, key] = codec.key(object as never, ctx);
      const byKey = this.#keys(codec, scope);
      return (
        byKey.get(key) ?? this.#append(object, byKey, key, this.#entry(codec, object, scope, ctx))
      );
    }
    if (object instanceof UnknownEntry) {
      const byKey = this.#keys(UnknownEntry, -1);
      const found = byKey.get(object.key);
      return found ?? this.#append(object, byKey, object.key, Entry.decode(object.bytes));
    }
    const name = (object as object)?.constructor?.name ?? typeof object;
    throw new EncodeError(ctx.path, `${name} is not a shared object`);
  }

  /**
   * A new value's entry: the one its slot noted when it was last lowered on the same scope (the
   * entry it refers to) for the same target, or lowered now, with the unknown fields of the
   * entry it was decoded from (an object decoded with them has a slot of its own).
   */
  #entry(codec: EntryCodec, object: SharedObject, scope: number, ctx: Context): Entry {
    const slot = object instanceof ValueObject ? tableSlot(object) : undefined;
    const last = slot?.lowered;
    const target = this.targetMinorVersion;
    if (last !== undefined && last.scope === scope && last.target === target) return last.entry;
    const entry = codec.lower(object as never, ctx);
    const origin = entryOrigin(object);
    if (origin) graftUnknownFields(origin, entry);
    if (slot) slot.lowered = { scope, target, entry: settled(entry) };
    return entry;
  }

  /** The keys of one kind and scope, and the indices of their entries. */
  #keys(kind: unknown, scope: number): Map<string, number> {
    // Leaves come in runs of one kind: the last kind's scopes are usually the ones wanted.
    let byScope = kind === this.#lastKind ? this.#lastScopes : this.#byValue.get(kind);
    if (!byScope) {
      byScope = new Map();
      this.#byValue.set(kind, byScope);
    }
    this.#lastKind = kind;
    this.#lastScopes = byScope;
    let byKey = byScope.get(scope);
    if (!byKey) {
      byKey = new Map();
      byScope.set(scope, byKey);
    }
    return byKey;
  }

  #append(object: SharedObject, byKey: Map<string, number>, key: string, entry: Entry): number {
    const index = this.entries.length;
    this.entries.push(entry);
    this.objects.push(object);
    byKey.set(key, index);
    return index;
  }
}

/** The context of one object's lowering, whose path is built when first read. */
class Context implements LowerContext {
  #path: ModelPath;
  readonly targetMinorVersion: number;

  constructor(
    path: ModelPath,
    readonly table: TableBuilder,
  ) {
    this.#path = path;
    this.targetMinorVersion = table.targetMinorVersion;
  }

  get path(): string {
    if (typeof this.#path !== "string") this.#path = this.#path();
    return this.#path;
  }
}
