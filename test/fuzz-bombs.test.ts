import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BOMBS } from "./fuzz/bombs";

/**
 * Bombs (fuzz/bombs.ts) fail with their code, in bounded memory: each is decoded in a process
 * whose heap may hold the limits' worth of work and little more, so decoding what a bomb claims
 * runs it out of memory and fails the test. `npm run fuzz` reports how long they take.
 */

// The child runs the built library (`npm test` builds it first), as the CLI tests do.
const LIBRARY = join(__dirname, "..", "dist", "src", "index.js");
const DECODE_STDIN = `
const { decodeSpecs, DecodeError } = require(${JSON.stringify(LIBRARY)});
let outcome;
try {
  decodeSpecs(new Uint8Array(require("node:fs").readFileSync(0)));
  outcome = ["decoded"];
} catch (error) {
  outcome = error instanceof DecodeError ? [error.code, error.path] : [String(error)];
}
process.stdout.write(JSON.stringify(outcome));`;
/** A million tree nodes, the most any accepted part of these bombs holds, take some 30 MB. */
const HEAP_MB = 96;

/** What decoding `bytes` gave in a process of HEAP_MB: [code, path], or why it failed. */
function decodeInBoundedHeap(bytes: Uint8Array): string[] {
  const args = [`--max-old-space-size=${HEAP_MB}`, "-e", DECODE_STDIN];
  const run = spawnSync(process.execPath, args, { input: bytes, maxBuffer: 1 << 20 });
  if (run.status !== 0) return [`exited ${run.status ?? run.signal}: ${run.stderr.toString()}`];
  return JSON.parse(run.stdout.toString());
}

describe("bombs fail in bounded memory", () => {
  test("the built library is there", () => {
    expect(existsSync(LIBRARY)).toBe(true);
  });

  test.each(BOMBS.map((b) => [b.name, b]))("%s", (_, bomb) => {
    expect(decodeInBoundedHeap(bomb.build())).toEqual([bomb.code, bomb.path]);
  });
});
