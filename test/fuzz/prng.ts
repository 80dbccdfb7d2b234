/**
 * xorshift32: a tiny PRNG that Python (python/tests/fuzzing.py) implements bit for bit, so one
 * seed gives the same mutated payloads in both languages.
 */
export class Prng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0 || 1;
  }

  /** The next 32-bit value. */
  next(): number {
    let x = this.#state;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#state = x >>> 0;
    return this.#state;
  }

  /** An integer in [0, n). */
  below(n: number): number {
    return this.next() % n;
  }
}
