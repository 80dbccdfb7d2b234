import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DecodeError, decodeSpecs } from "../src";

/**
 * Bombs: payloads that claim far more than they hold, or hold more than the limits allow.
 * Each must fail fast with its code, allocating little beyond its own bytes.
 * python/tests/test_fuzz_bombs.py builds the same ones.
 */

const HEADER = [0x0a, 4, 0x08, 1, 0x18, 1]; // major 1, kind specs

function varint(value: number): number[] {
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

const corpus = (name: string) => () =>
  new Uint8Array(readFileSync(join(__dirname, "corpus", "bad", `${name}.bin`)));

const BOMBS: [string, () => Uint8Array, string, string][] = [
  [
    "an iota claiming 2^40 devices",
    corpus("limit-exceeded--iota-of-2-to-the-40-devices"),
    "limit-exceeded",
    "table[0].device_list.iota.iota.reshape_dims",
  ],
  [
    "a tile assignment claiming 2^60 tiles",
    corpus("limit-exceeded--2-to-the-60-tiles"),
    "limit-exceeded",
    "table[7].gspmd_sharding.tile_assignment.dims",
  ],
  [
    "a tree claiming 10^9 nodes (one arity)",
    corpus("invalid-tree--arity-of-a-billion"),
    "invalid-tree",
    "specs.treedef.arities[0]",
  ],
  [
    "a tree nested 10^6 deep",
    () => tree(Buffer.concat([Buffer.alloc(1e6, 4), Buffer.from([1])]), Buffer.alloc(1e6, 1)),
    "limit-exceeded",
    "specs.treedef.kinds[1000]",
  ],
  [
    "a tree of 10^7 + 1 nodes",
    () => tree(Buffer.alloc(1e7 + 1, 1)),
    "limit-exceeded",
    "specs.treedef.kinds",
  ],
  [
    "a list claiming 10^9 children among 10^6 nodes",
    () => tree(Buffer.concat([Buffer.from([4]), Buffer.alloc(1e6, 1)]), Buffer.from(varint(1e9))),
    "invalid-tree",
    "specs.treedef.arities[0]",
  ],
  [
    "1,000,001 empty table entries",
    () => specs(field(2, Buffer.from(new Uint8Array(2_000_002).map((_, i) => (i % 2 ? 0 : 0x0a))))),
    "limit-exceeded",
    "table.entries",
  ],
  [
    "a device list of 4,194,305 ids",
    () => specs(field(2, field(1, field(1, field(2, field(1, Buffer.alloc(4_194_305, 1))))))),
    "limit-exceeded",
    "table[0].device_list.plain.ids",
  ],
  [
    "1,000,001 unknown fields",
    () => specs(Buffer.from(new Uint8Array(3_000_003).map((_, i) => [0xf8, 0x07, 0][i % 3]))),
    "limit-exceeded",
    "payload",
  ],
  [
    "a payload of 64 MiB and a byte",
    () => specs(Buffer.alloc(64 * 1024 * 1024 + 1 - HEADER.length)),
    "limit-exceeded",
    "payload",
  ],
];

describe("bombs fail fast in bounded memory", () => {
  test.each(BOMBS)("%s", (_, build, code, path) => {
    const bytes = build();
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    let caught: unknown;
    try {
      decodeSpecs(bytes);
    } catch (error) {
      caught = error;
    }
    const ms = performance.now() - started;
    const grown = process.memoryUsage().heapUsed - before;
    expect(caught).toBeInstanceOf(DecodeError);
    expect({ code: (caught as DecodeError).code, path: (caught as DecodeError).path }).toEqual({
      code,
      path,
    });
    expect(ms).toBeLessThan(1000);
    // What the limits allow is parsed (a million tree nodes take some 30 MB), nothing more.
    expect(grown).toBeLessThan(64 * 1024 * 1024);
  });
});
