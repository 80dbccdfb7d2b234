import type { Prng } from "./prng";
import { allNodes, readTree, varint, writeTree } from "./wire-tree";

/**
 * Mutations of valid payloads: flip a bit, set a byte, truncate, duplicate a slice, splice in a
 * slice of another payload, delete a slice, insert a large varint; and, on the payload read as
 * a tree of fields, set a varint, drop a field or repeat one, keeping the bytes well-formed.
 * python/tests/fuzzing.py makes the same choices in the same order.
 */

// Values that sit on boundaries: lengths, counts, int32 and uint32 edges, 2^53.
const VARINTS = [0, 1, 127, 128, 1000, 65_536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 1e9, 2 ** 53];
// Values a tree mutation sets a varint to, besides small ones.
const VALUES = [0, 1, 2, 3, 4, 7, 8, 9, 63, 64, 65, 127, 128, 1023, 1024, 2 ** 31, 2 ** 32 - 1]
  .map(varint)
  .concat([varint(2n ** 53n), varint(2n ** 64n - 1n)]);
const BYTES = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x0a, 0x12];

/** One to four mutations of `seed`, splicing from `others`. */
export function mutate(seed: Uint8Array, others: readonly Uint8Array[], rng: Prng): Uint8Array {
  let data = Array.from(seed);
  // Half the cases keep the bytes well-formed, to reach the checks behind the wire scan.
  const wellFormed = rng.below(2) === 0;
  const rounds = 1 + rng.below(4);
  for (let r = 0; r < rounds; r++) {
    data = wellFormed ? mutateTree(data, 7 + rng.below(3), rng) : mutateBytes(data, others, rng);
  }
  return new Uint8Array(data);
}

function mutateBytes(data: number[], others: readonly Uint8Array[], rng: Prng): number[] {
  const n = data.length;
  const at = () => rng.below(n + 1);
  const op = rng.below(7);
  switch (op) {
    case 0: {
      if (n === 0) return data;
      const i = rng.below(n);
      data[i] ^= 1 << rng.below(8);
      return data;
    }
    case 1: {
      if (n === 0) return data;
      const i = rng.below(n);
      data[i] = rng.below(2) ? BYTES[rng.below(BYTES.length)] : rng.below(256);
      return data;
    }
    case 2:
      return data.slice(0, at());
    case 3: {
      const [a, b] = span(n, rng);
      const c = at();
      return [...data.slice(0, c), ...data.slice(a, b), ...data.slice(c)];
    }
    case 4: {
      const other = Array.from(others[rng.below(others.length)]);
      const [a, b] = span(other.length, rng);
      const [c, d] = span(n, rng);
      return [...data.slice(0, c), ...other.slice(a, b), ...data.slice(d)];
    }
    case 5: {
      const [a, b] = span(n, rng);
      return [...data.slice(0, a), ...data.slice(b)];
    }
    default: {
      const c = at();
      const value = varint(VARINTS[rng.below(VARINTS.length)]);
      return [...data.slice(0, c), ...value, ...data.slice(c)];
    }
  }
}

/** Sets a varint, drops a field or repeats one; bytes that read as no tree get a flipped bit. */
function mutateTree(data: number[], op: number, rng: Prng): number[] {
  const tree = readTree(new Uint8Array(data));
  const nodes = tree ? allNodes(tree) : [];
  if (!tree || nodes.length === 0) {
    if (data.length > 0) data[rng.below(data.length)] ^= 1 << rng.below(8);
    return data;
  }
  const { node, list } = nodes[rng.below(nodes.length)];
  const at = list.indexOf(node);
  if (op === 7) {
    if (node.wireType === 0) {
      node.value = rng.below(2) ? VALUES[rng.below(VALUES.length)] : varint(rng.below(16));
    } else {
      node.children = undefined;
      node.value = new Uint8Array(0);
    }
  } else if (op === 8) {
    list.splice(at, 1);
  } else {
    list.splice(at, 0, node);
  }
  return Array.from(writeTree(tree));
}

/** A slice [a, b) of at most 16 bytes within a length. */
function span(length: number, rng: Prng): [number, number] {
  const a = rng.below(length + 1);
  return [a, Math.min(length, a + rng.below(17))];
}
