import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DECODE_ERROR_CODES, DecodeError, decodeProgram, decodeSpecs } from "../src";
import { CORPUS_CASES, type CorpusCase } from "./corpus-cases";

// UPDATE_CORPUS=1 npx jest test/corpus.test.ts rewrites the files from corpus-cases.ts.
const DIR = join(__dirname, "corpus", "bad");
const CODES = DECODE_ERROR_CODES;

function expectation({ decoder, path, code }: CorpusCase): string {
  return `${JSON.stringify({ decoder, path, code }, null, 2)}\n`;
}

if (process.env.UPDATE_CORPUS) {
  mkdirSync(DIR, { recursive: true });
  for (const file of readdirSync(DIR)) rmSync(join(DIR, file));
  for (const c of CORPUS_CASES) {
    writeFileSync(join(DIR, `${c.name}.bin`), c.bytes());
    writeFileSync(join(DIR, `${c.name}.expect.json`), expectation(c));
  }
}

describe("the bad-payload corpus", () => {
  test("the committed files are what corpus-cases.ts describes", () => {
    const names = CORPUS_CASES.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    const files = readdirSync(DIR).sort();
    expect(files).toEqual(names.flatMap((n) => [`${n}.bin`, `${n}.expect.json`]).sort());
    for (const c of CORPUS_CASES) {
      expect(Buffer.from(readFileSync(join(DIR, `${c.name}.bin`)))).toEqual(Buffer.from(c.bytes()));
      expect(readFileSync(join(DIR, `${c.name}.expect.json`), "utf8")).toBe(expectation(c));
    }
  });

  test("it covers every error code", () => {
    expect(new Set(CORPUS_CASES.map((c) => c.code))).toEqual(new Set(CODES));
  });

  test.each(CORPUS_CASES.map((c) => [c.name]))("%s", (name) => {
    const file = join(DIR, `${name}.bin`);
    const want = JSON.parse(readFileSync(join(DIR, `${name}.expect.json`), "utf8"));
    const bytes = existsSync(file) ? new Uint8Array(readFileSync(file)) : new Uint8Array();
    const decode = want.decoder === "program" ? decodeProgram : decodeSpecs;
    const started = performance.now();
    let caught: unknown;
    try {
      decode(bytes);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DecodeError);
    const { path, code } = caught as DecodeError;
    expect({ path, code }).toEqual({ path: want.path, code: want.code });
    expect(performance.now() - started).toBeLessThan(500);
  });
});
