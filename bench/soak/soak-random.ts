/**
 * Seeded pseudo-random numbers for the soak's faults, so that a run can be repeated: the same
 * seed gives every connection the same plan of cuts and stalls.
 */

/** A generator of numbers in [0, 1) from `seed` (mulberry32: small, fast, good enough for faults). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** A seed of its own for each of `parts` (a connection, a direction) derived from `seed`. */
export function derivedSeed(seed: number, ...parts: number[]): number {
  // FNV-1a over the numbers: neighbouring connections get unrelated streams.
  let hash = 0x811c9dc5 ^ (seed >>> 0);
  for (const part of parts) {
    hash = Math.imul(hash ^ (part >>> 0), 0x01000193) >>> 0;
    hash = Math.imul(hash ^ (hash >>> 13), 0x5bd1e995) >>> 0;
  }
  return hash >>> 0;
}
