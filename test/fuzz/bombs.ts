import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Bombs: payloads that claim far more than they hold, or hold more than the limits allow.
 * Each must fail with its code, allocating little beyond its own bytes (test/fuzz-bombs.test.ts);
 * `npm run fuzz` times two of them (bomb-timings.fuzz.ts). python/tests/bombs.py builds the same.
 */
export interface Bomb {
  name: string;
  build: () => Uint8Array;
  code: string;
  path: string;
}

const HEADER = [0x0a, 4, 0x08, 1, 0x18, 1]; // major 1, kind specs

/** A protobuf varint. */
export function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** A length-delimited field around `content`. */
function field(number: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([number * 8 + 2, ...varint(content.length)]), content]);
}

/** A specs payload: the header, then `body`. */
function specs(...body: Buffer[]): Uint8Array {
  return new Uint8Array(Buffer.concat([Buffer.from(HEADER), ...body]));
}

/** A specs payload whose tree has these kinds and arities (packed), and an empty table. */
function tree(kinds: Buffer, arities: Buffer = Buffer.alloc(0)): Uint8Array {
  const treedef = Buffer.concat([field(1, kinds), arities.length ? field(2, arities) : arities]);
  return specs(field(2, Buffer.alloc(0)), field(3, field(1, treedef)));
}

/** `count` copies of `bytes`. */
function repeated(bytes: number[], count: number): Buffer {
  return Buffer.from(new Uint8Array(bytes.length * count).map((_, i) => bytes[i % bytes.length]));
}

const corpus = (name: string) => () =>
  new Uint8Array(readFileSync(join(__dirname, "..", "corpus", "bad", `${name}.bin`)));

/** The bombs the fuzz report times: rejecting each must take under TARGET_SECONDS. */
export const TIMED_BOMBS = ["1,000,001 empty table entries", "1,000,001 unknown fields"];
export const TARGET_SECONDS = 0.3;

export const BOMBS: Bomb[] = [
  {
    name: "an iota claiming 2^40 devices",
    build: corpus("limit-exceeded--iota-of-2-to-the-40-devices"),
    code: "limit-exceeded",
    path: "table[0].device_list.iota.iota.reshape_dims",
  },
  {
    name: "a tile assignment claiming 2^60 tiles",
    build: corpus("limit-exceeded--2-to-the-60-tiles"),
    code: "limit-exceeded",
    path: "table[7].gspmd_sharding.tile_assignment.dims",
  },
  {
    name: "a tree claiming 10^9 nodes (one arity)",
    build: corpus("invalid-tree--arity-of-a-billion"),
    code: "invalid-tree",
    path: "specs.treedef.arities[0]",
  },
  {
    name: "a tree nested 10^6 deep",
    build: () =>
      tree(Buffer.concat([Buffer.alloc(1e6, 4), Buffer.from([1])]), Buffer.alloc(1e6, 1)),
    code: "limit-exceeded",
    path: "specs.treedef.kinds[1000]",
  },
  {
    name: "a tree of 10^7 + 1 nodes",
    build: () => tree(Buffer.alloc(1e7 + 1, 1)),
    code: "limit-exceeded",
    path: "specs.treedef.kinds",
  },
  {
    name: "a list claiming 10^9 children among 10^6 nodes",
    build: () =>
      tree(Buffer.concat([Buffer.from([4]), Buffer.alloc(1e6, 1)]), Buffer.from(varint(1e9))),
    code: "invalid-tree",
    path: "specs.treedef.arities[0]",
  },
  {
    name: "1,000,001 empty table entries",
    build: () => specs(field(2, repeated([0x0a, 0], 1_000_001))),
    code: "limit-exceeded",
    path: "table.entries",
  },
  {
    name: "a device list of 4,194,305 ids",
    build: () =>
      specs(field(2, field(1, field(1, field(2, field(1, Buffer.alloc(4_194_305, 1))))))),
    code: "limit-exceeded",
    path: "table[0].device_list.plain.ids",
  },
  {
    name: "1,000,001 unknown fields",
    build: () => specs(repeated([0xf8, 0x07, 0], 1_000_001)),
    code: "limit-exceeded",
    path: "payload",
  },
  {
    name: "a payload of 64 MiB and a byte",
    build: () => specs(Buffer.alloc(64 * 1024 * 1024 + 1 - HEADER.length)),
    code: "limit-exceeded",
    path: "payload",
  },
];
