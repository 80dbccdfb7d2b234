/**
 * Hash-consing without strings: a sequence of ints (or of bytes) gets a small id, equal
 * exactly when the sequences are equal. A numeric hash finds the candidates and a real
 * comparison decides, so a collision costs a comparison, never a wrong id.
 */

/** Ids for sequences of int32 values: 0, 1, 2, ... in order of first appearance. */
export class SequenceIds {
  /** Open addressing: slot -> id + 1 (0 for empty); its size a power of two, at most half full. */
  #slots = new Int32Array(64);
  /** Per id: its hash, then where its values start in #data (the next id's start ends them). */
  #hashes = new Int32Array(32);
  #starts = new Int32Array(33);
  #data = new Int32Array(128);
  #size = 0;

  /** How many distinct sequences have been seen. */
  get size(): number {
    return this.#size;
  }

  /** The id of `values[0 .. length]`. */
  id(values: ArrayLike<number>, length: number = values.length): number {
    let h = length;
    for (let i = 0; i < length; i++) h = mix(h, values[i]);
    const mask = this.#slots.length - 1;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const found = this.#slots[s] - 1;
      if (found < 0) return this.#add(values, length, h, s);
      if (this.#hashes[found] === h && this.#equals(found, values, length)) return found;
    }
  }

  #equals(id: number, values: ArrayLike<number>, length: number): boolean {
    const start = this.#starts[id];
    if (this.#starts[id + 1] - start !== length) return false;
    const data = this.#data;
    for (let i = 0; i < length; i++) if (data[start + i] !== values[i]) return false;
    return true;
  }

  #add(values: ArrayLike<number>, length: number, h: number, slot: number): number {
    const id = this.#size++;
    if (id === this.#hashes.length) {
      this.#hashes = grown(this.#hashes, id * 2);
      this.#starts = grown(this.#starts, id * 2 + 1);
    }
    const start = this.#starts[id];
    if (start + length > this.#data.length)
      this.#data = grown(this.#data, Math.max(2 * this.#data.length, start + length));
    for (let i = 0; i < length; i++) this.#data[start + i] = values[i];
    this.#starts[id + 1] = start + length;
    this.#hashes[id] = h;
    this.#slots[slot] = id + 1;
    if (2 * this.#size > this.#slots.length) this.#rehash();
    return id;
  }

  #rehash(): void {
    const slots = new Int32Array(this.#slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 0; id < this.#size; id++) {
      let s = this.#hashes[id] & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = id + 1;
    }
    this.#slots = slots;
  }
}

/** Ids for byte strings: 0, 1, 2, ... in order of first appearance; equal bytes, equal ids. */
export class BytesIds {
  readonly #byHash = new Map<number, number[]>();
  readonly #bytes: Uint8Array[] = [];

  /** The id of these bytes (kept by reference: they must not change while this lives). */
  id(bytes: Uint8Array): number {
    let h = bytes.length;
    for (let i = 0; i < bytes.length; i++) h = mix(h, bytes[i]);
    let ids = this.#byHash.get(h);
    if (ids) {
      for (const id of ids) if (sameBytes(this.#bytes[id], bytes)) return id;
    } else {
      ids = [];
      this.#byHash.set(h, ids);
    }
    const id = this.#bytes.length;
    this.#bytes.push(bytes);
    ids.push(id);
    return id;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function grown(array: Int32Array, size: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(size);
  bigger.set(array);
  return bigger;
}

/** One step of a 31-bit multiplicative hash (kept small so V8 keeps Map keys as small ints). */
function mix(h: number, value: number): number {
  h = Math.imul(h ^ value, 0x9e3779b1);
  return (h ^ (h >>> 15)) & 0x3fffffff;
}
