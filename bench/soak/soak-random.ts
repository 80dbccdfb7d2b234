/**
 * Seeds for the soak's faults, so that a run can be repeated: the same seed gives every
 * connection the same plan of cuts and stalls (test/support/seeded-random.ts makes the numbers).
 */

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
