import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { DecodeError, decodeSpecs } from "../../src";
import { BOMBS, TARGET_SECONDS, TIMED_BOMBS } from "./bombs";

/**
 * `npm run fuzz` only (not a test): how long rejecting the timed bombs takes in TypeScript and
 * in Python (python/tests/fuzzing.py), as figures and as ratios to the target.
 */
const ROOT = join(__dirname, "..", "..");
const RUNS = 5;

/** The median of RUNS decodes of `bytes`, in seconds; each must be refused. */
function medianSeconds(bytes: Uint8Array): number {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    expect(() => decodeSpecs(bytes)).toThrow(DecodeError);
    samples.push((performance.now() - started) / 1000);
  }
  return samples.sort((a, b) => a - b)[Math.floor(RUNS / 2)];
}

function pythonSeconds(): Record<string, number> {
  const run = spawnSync(
    join(ROOT, ".venv", "bin", "python"),
    [join(ROOT, "python", "tests", "fuzzing.py"), "bomb-timings"],
    { env: { ...process.env, JAX_PLATFORMS: "cpu" }, encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`fuzzing.py bomb-timings failed:\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) as string);
}

const figure = (seconds: number) =>
  `${(seconds * 1000).toFixed(1)} ms (${(seconds / TARGET_SECONDS).toPrecision(2)}x)`;

test("time to reject the timed bombs, against the target", () => {
  const python = pythonSeconds();
  const lines = [
    `bomb rejection, median of ${RUNS} runs (target ${TARGET_SECONDS * 1000} ms = 1x)`,
  ];
  lines.push(`  ${"".padEnd(32)}${"TypeScript".padEnd(20)}Python`);
  for (const name of TIMED_BOMBS) {
    const bomb = BOMBS.find((b) => b.name === name);
    if (bomb === undefined) throw new Error(`no bomb named ${name}`);
    const ts = medianSeconds(bomb.build());
    lines.push(`  ${name.padEnd(32)}${figure(ts).padEnd(20)}${figure(python[name])}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
  expect(Object.keys(python).sort()).toEqual([...TIMED_BOMBS].sort());
});
