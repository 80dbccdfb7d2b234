import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FUZZ_SEED, fuzz } from "./fuzz/run";
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

  test(
    `${CASES} mutated payloads each decode to a valid model or throw a DecodeError`,
    () => {
      const started = performance.now();
      const report = fuzz(loadSeeds(), CASES);
      const seconds = (performance.now() - started) / 1000;
      const codes = Object.entries(report.byCode).sort(([, a], [, b]) => b - a);
      const errors = codes.reduce((sum, [, n]) => sum + n, 0);
      const lines = [
        `fuzz (TypeScript, seed ${FUZZ_SEED.toString(16)}): ${CASES} cases in ${seconds.toFixed(1)} s`,
        `  decoded ${report.decoded}, DecodeError ${errors}, other ${report.failures.length}`,
        ...codes.map(([code, n]) => `    ${code.padEnd(24)} ${n}`),
        `  slowest decode ${report.slowestMs.toFixed(1)} ms`,
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
      // python/tests/test_fuzz.py compares its outcomes for the same cases with these.
      mkdirSync(OUT, { recursive: true });
      writeFileSync(join(OUT, `typescript-${CASES}.txt`), `${report.outcomes.join("\n")}\n`);
      expect(report.failures.slice(0, 5)).toEqual([]);
      expect(report.slowestMs).toBeLessThan(1000);
      expect(report.decoded).toBeGreaterThan(CASES / 100);
      expect(Object.keys(report.byCode).length).toBeGreaterThan(8);
    },
    60_000 + CASES * 5,
  );
});
