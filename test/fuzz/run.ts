import {
  DecodeError,
  decodeProgram,
  decodeSpecs,
  decodeValue,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  type Program,
  type Specs,
  type Value,
} from "../../src";
import { mutate } from "./mutate";
import { Prng } from "./prng";
import type { Seed } from "./seeds";

/** How one mutated payload fared: "decoded", a DecodeError's code and path, or a failure. */
export interface Outcome {
  kind: "decoded" | "decode-error" | "failure";
  /** The code, or what went wrong. */
  code?: string;
  path?: string;
}

/** What a fuzz run saw. */
export interface FuzzReport {
  cases: number;
  decoded: number;
  byCode: Record<string, number>;
  failures: { input: string; what: string }[];
  slowestMs: number;
  /** How long the whole run took. */
  seconds: number;
  /** One line per case, comparable with Python's (python/tests/fuzzing.py). */
  outcomes: string[];
}

/** The seed every fuzz run starts from; `npm run fuzz` and the tests use it alike. */
export const FUZZ_SEED = 0x5eed_c0de;

/** Mutates the seeds `cases` times and decodes each result; never throws. */
export function fuzz(seeds: readonly Seed[], cases: number, seed = FUZZ_SEED): FuzzReport {
  const runStarted = performance.now();
  const rng = new Prng(seed);
  const all = seeds.map((s) => s.bytes);
  const report: FuzzReport = {
    cases,
    decoded: 0,
    byCode: {},
    failures: [],
    slowestMs: 0,
    seconds: 0,
    outcomes: [],
  };
  for (let i = 0; i < cases; i++) {
    const from = seeds[rng.below(seeds.length)];
    const input = mutate(from.bytes, all, rng);
    const started = performance.now();
    const outcome = decodeAndCheck(from.decoder, input);
    report.slowestMs = Math.max(report.slowestMs, performance.now() - started);
    if (outcome.kind === "decoded") report.decoded++;
    if (outcome.kind === "decode-error") {
      const code = outcome.code as string;
      report.byCode[code] = (report.byCode[code] ?? 0) + 1;
    }
    if (outcome.kind === "failure") {
      report.failures.push({ input: Buffer.from(input).toString("hex"), what: outcome.code ?? "" });
    }
    report.outcomes.push(
      outcome.kind === "decode-error" ? `${outcome.code} ${outcome.path}` : outcome.kind,
    );
  }
  report.seconds = (performance.now() - runStarted) / 1000;
  return report;
}

/** A run's figures as lines to print: counts by outcome and code, and its times. */
export function summary(report: FuzzReport): string {
  const codes = Object.entries(report.byCode).sort(([, a], [, b]) => b - a);
  const errors = codes.reduce((sum, [, n]) => sum + n, 0);
  const lines = [
    `fuzz (TypeScript, seed ${FUZZ_SEED.toString(16)}): ${report.cases} cases in ${report.seconds.toFixed(1)} s`,
    `  decoded ${report.decoded}, DecodeError ${errors}, other ${report.failures.length}`,
    ...codes.map(([code, n]) => `    ${code.padEnd(24)} ${n}`),
    `  slowest decode ${report.slowestMs.toFixed(1)} ms`,
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * Decodes; a payload that decodes must be a valid model: it encodes, and its encoding decodes
 * and encodes again to the same bytes. Anything but that or a DecodeError is a failure.
 */
export function decodeAndCheck(decoder: Seed["decoder"], input: Uint8Array): Outcome {
  const { decode, encode } = CODECS[decoder];
  let model: Model;
  try {
    model = decode(input);
  } catch (error) {
    if (error instanceof DecodeError)
      return { kind: "decode-error", code: error.code, path: error.path };
    return { kind: "failure", code: `decoding threw ${String(error)}` };
  }
  try {
    const once = encode(model);
    const twice = encode(decode(once));
    if (Buffer.compare(once, twice) === 0) return { kind: "decoded" };
    return { kind: "failure", code: "re-encoding is not stable" };
  } catch (error) {
    return { kind: "failure", code: `a decoded model does not round-trip: ${String(error)}` };
  }
}

type Model = Specs | Program | Value;

/** Each seed's reader and writer, by the decoder its name picks (seeds.ts). */
const CODECS: Record<
  Seed["decoder"],
  { decode: (bytes: Uint8Array) => Model; encode: (model: Model) => Uint8Array }
> = {
  specs: {
    decode: decodeSpecs,
    encode: (model) => encodeSpecs((model as Specs).treedef, (model as Specs).leaves),
  },
  program: { decode: decodeProgram, encode: (model) => encodeProgram(model as Program) },
  value: {
    decode: decodeValue,
    encode: (model) => encodeValue((model as Value).treedef, (model as Value).leaves),
  },
};
