import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import { decodeAndCheck, fuzz, summary } from "./fuzz/run";
import { buildSeeds, loadSeeds, SEED_DIR } from "./fuzz/seeds";

// `npm test` runs a few thousand cases; `npm run fuzz` sets FUZZ_CASES=100000.
const CASES = Number(process.env.FUZZ_CASES ?? 3000);
const OUT = join(__dirname, "..", "out", "fuzz");

if (process.env.UPDATE_CORPUS) {
  mkdirSync(SEED_DIR, { recursive: true });
  for (const [name, bytes] of Object.entries(buildSeeds()))
    writeFileSync(join(SEED_DIR, `${name}.bin`), bytes);
}

describe("the mutation fuzzer", () => {
  test("the committed seeds are what seeds.ts builds", () => {
    const built = buildSeeds();
    expect(readdirSync(SEED_DIR).sort()).toEqual(
      Object.keys(built)
        .map((n) => `${n}.bin`)
        .sort(),
    );
    for (const [name, bytes] of Object.entries(built)) {
      expect(new Uint8Array(readFileSync(join(SEED_DIR, `${name}.bin`)))).toEqual(bytes);
    }
  });

  test("the key-trie seed holds its str keys as a key trie, with repeats", () => {
    const treedef = SpecsPayload.decode(buildSeeds()["specs-key-trie"]).specs?.treedef;
    const nodes = treedef?.keyTrie?.nodes ?? [];
    expect(nodes.filter((form, i) => i % 2 === 1 && form % 2 === 1).length).toBeGreaterThan(0);
  });

  test("the leaf-copies seed writes its leaves with copies, after a tree with REPEATs", () => {
    const message = SpecsPayload.decode(buildSeeds()["specs-leaf-copies"]);
    const specs = message.specs;
    expect(message.header?.minorVersion).toBeGreaterThanOrEqual(3);
    expect(specs?.treedef?.kinds.filter((k) => k === NodeKind.NODE_KIND_REPEAT).length).toBe(3);
    const copies = specs?.leafCopies ?? [];
    expect(copies.length).toBeGreaterThanOrEqual(3);
    // One copy overlaps what it makes: it starts fewer leaves back than it makes.
    const overlapping = copies.filter((_, c) => c % 3 === 1 && copies[c] < copies[c + 1]);
    expect(overlapping.length).toBeGreaterThan(0);
    expect(specs?.leaves.length).toBeLessThan(12 + 64);
  });

  test(
    `${CASES} mutated payloads each decode to a valid model or throw a DecodeError`,
    () => {
      const report = fuzz(loadSeeds(), CASES);
      process.stdout.write(summary(report));
      // python/tests/test_fuzz.py compares its outcomes for the same cases with these.
      mkdirSync(OUT, { recursive: true });
      writeFileSync(join(OUT, `typescript-${CASES}.txt`), `${report.outcomes.join("\n")}\n`);
      expect(report.failures.slice(0, 5)).toEqual([]);
      expect(report.decoded).toBeGreaterThan(CASES / 100);
      expect(Object.keys(report.byCode).length).toBeGreaterThan(8);
    },
    60_000 + CASES * 5,
  );

  test("every truncation of every seed decodes to a valid model or throws a DecodeError", () => {
    const outcomes = loadSeeds().flatMap((seed) =>
      Array.from(seed.bytes, (_, n) => decodeAndCheck(seed.decoder, seed.bytes.subarray(0, n))),
    );
    expect(outcomes.filter((o) => o.kind === "failure")).toEqual([]);
    expect(outcomes.filter((o) => o.kind === "decode-error").length).toBeGreaterThan(0);
  });
});
