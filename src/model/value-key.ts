/**
 * Model values compare by a canonical key string, so equality and hashing can never disagree.
 * Keys are computed once per (immutable) object.
 */
export abstract class ValueObject {
  #key: string | undefined;
  #hash: number | undefined;

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

/** Orders strings by Unicode code point, as Python does (UTF-16 order differs above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
