import type { TableSlot } from "../table/table-slots";

/**
 * Model values compare by a canonical key string, so equality and hashing can never disagree.
 * Keys are computed once per (immutable) object.
 */
export abstract class ValueObject {
  #key: string | undefined;
  #hash: number | undefined;
  #tableSlot: TableSlot | undefined = undefined;

  /**
   * For the table builder (table/table-slots.ts): where tables note the entry this value got,
   * shared with every equal object once resolved. Not part of the value.
   */
  get tableSlot(): TableSlot | undefined {
    return this.#tableSlot;
  }

  set tableSlot(slot: TableSlot) {
    this.#tableSlot = slot;
  }

  /** The canonical description of this value, equal exactly when the values are equal. */
  protected abstract computeKey(): string;

  /** The value key; equal keys mean equal values. */
  get key(): string {
    this.#key ??= this.computeKey();
    return this.#key;
  }

  /** Value equality with JAX's meaning. */
  equals(other: unknown): boolean {
    return other === this || (other instanceof ValueObject && other.key === this.key);
  }

  /** A stable 32-bit hash of the value (FNV-1a over the key). */
  hash(): number {
    if (this.#hash === undefined) {
      let h = 0x811c9dc5;
      const key = this.key;
      for (let i = 0; i < key.length; i++) {
        h ^= key.charCodeAt(i);
        h = Math.imul(h, 0x01000193);
      }
      this.#hash = h >>> 0;
    }
    return this.#hash;
  }
}

/** A value interned by WeakInterner: one record per distinct value while any holder lives. */
export interface Interned<T> {
  /** Short, and equal exactly when the values are equal (while both are alive). */
  readonly token: string;
  readonly value: T;
}

interface Slot<T> extends Interned<T> {
  readonly suffix: number;
}

/**
 * Gives values too large for a key string a short token, by value. A record lives as long as
 * something holds it (model objects do) and is dropped afterwards: the interner holds records
 * weakly, so it keeps nothing alive. The token is the value's hash, with a suffix only when two
 * live values share a hash, so it is the same in every process unless hashes collide.
 */
export class WeakInterner<T> {
  readonly #buckets = new Map<number, WeakRef<Slot<T>>[]>();
  readonly #dropped = new FinalizationRegistry<number>((hash) => this.#prune(hash));

  constructor(
    readonly prefix: string,
    readonly same: (a: T, b: T) => boolean,
  ) {}

  /** The record of `value`, whose hash is `hash`: the one of an equal value, or a new one. */
  intern(value: T, hash: number): Interned<T> {
    const bucket = this.#buckets.get(hash) ?? [];
    const suffixes: number[] = [];
    for (const ref of bucket) {
      const slot = ref.deref();
      if (!slot) continue;
      if (this.same(slot.value, value)) return slot;
      suffixes.push(slot.suffix);
    }
    let suffix = 0;
    while (suffixes.includes(suffix)) suffix++;
    const token = `${this.prefix}${(hash >>> 0).toString(16)}${suffix ? `.${suffix}` : ""}`;
    const slot: Slot<T> = { token, value, suffix };
    bucket.push(new WeakRef(slot));
    this.#buckets.set(hash, bucket);
    this.#dropped.register(slot, hash);
    return slot;
  }

  #prune(hash: number): void {
    const live = (this.#buckets.get(hash) ?? []).filter((ref) => ref.deref() !== undefined);
    if (live.length) this.#buckets.set(hash, live);
    else this.#buckets.delete(hash);
  }
}

/** Orders strings by Unicode code point, as Python does (UTF-16 order differs above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  // Code units up to the first that differ: where neither is a surrogate, the code points there
  // are those units (whatever came before), so their order is the strings' order.
  let first = 0;
  while (first < n && a.charCodeAt(first) === b.charCodeAt(first)) first++;
  if (first === n) return a.length - b.length;
  const x = a.charCodeAt(first);
  const y = b.charCodeAt(first);
  if ((x < 0xd800 || x > 0xdfff) && (y < 0xd800 || y > 0xdfff)) return x - y;
  return byCodePoint(a, b, n);
}

/** compareCodePoints, code point by code point from the start (a surrogate where they differ). */
function byCodePoint(a: string, b: string, n: number): number {
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
