import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DECODE_ERROR_CODES, DecodeError, decodeProgram, decodeSpecs } from "../src";
import { CORPUS_CASES, type CorpusCase } from "./corpus-cases";

// UPDATE_CORPUS=1 npx jest test/corpus.test.ts rewrites the files from corpus-cases.ts.
const DIR = join(__dirname, "corpus", "bad");

/** The .expect.json of a case: decoder, path, code, then any options and message text. */
function expectation(c: CorpusCase): string {
  const { decoder, path, code, limits, maxMinorVersion, message } = c;
  return `${JSON.stringify({ decoder, path, code, limits, maxMinorVersion, message }, null, 2)}\n`;
}

if (process.env.UPDATE_CORPUS) {
  mkdirSync(DIR, { recursive: true });
  for (const file of readdirSync(DIR)) rmSync(join(DIR, file));
  for (const c of CORPUS_CASES) {
    writeFileSync(join(DIR, `${c.name}.bin`), c.bytes());
    writeFileSync(join(DIR, `${c.name}.expect.json`), expectation(c));
  }
}

/** The error decoding throws; no error, or another kind of error, fails the test. */
function decodeError(decode: () => unknown): DecodeError {
  try {
    decode();
  } catch (error) {
    if (error instanceof DecodeError) return error;
    throw error;
  }
  throw new Error("the payload decoded");
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

  test("it covers every error code but the one only a reader that unpickles raises", () => {
    const codes = DECODE_ERROR_CODES.filter((code) => code !== "writer-mismatch");
    expect(new Set(CORPUS_CASES.map((c) => c.code))).toEqual(new Set(codes));
  });

  test.each(CORPUS_CASES.map((c) => [c.name]))("%s", (name) => {
    // Only the committed files: a missing one throws here, as it does in Python.
    const bytes = new Uint8Array(readFileSync(join(DIR, `${name}.bin`)));
    const want = JSON.parse(readFileSync(join(DIR, `${name}.expect.json`), "utf8"));
    const decode = want.decoder === "program" ? decodeProgram : decodeSpecs;
    const options = { limits: want.limits, maxMinorVersion: want.maxMinorVersion };
    const error = decodeError(() => decode(bytes, options));
    expect({ path: error.path, code: error.code }).toEqual({ path: want.path, code: want.code });
    expect(error.message.startsWith(`${want.path}: `)).toBe(true);
    if (want.message !== undefined) expect(error.message).toMatch(new RegExp(want.message));
  });
});
