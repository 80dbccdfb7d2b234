import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalizePayload } from "../src";
import { payloadFromJson, payloadToJson } from "../src/json-form";
import { VECTOR_CASES } from "./vector-cases";

// UPDATE_VECTORS=1 rewrites test/vectors from the cases (npm run vectors:update); review the diff.
const UPDATE = process.env.UPDATE_VECTORS === "1";
const VECTORS = join(__dirname, "vectors");
const GOLDEN = join(__dirname, "golden");

const read = (dir: string, name: string) => new Uint8Array(readFileSync(join(dir, name)));
const readJson = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), "utf8"));

describe("conformance vectors", () => {
  if (UPDATE) {
    for (const c of VECTOR_CASES) {
      const bytes = c.bytes();
      writeFileSync(join(VECTORS, `${c.name}.bin`), bytes);
      writeFileSync(
        join(VECTORS, `${c.name}.json`),
        `${JSON.stringify(payloadToJson(bytes), null, 2)}\n`,
      );
    }
  }

  test.each(VECTOR_CASES.map((c) => [c.name, c] as const))(
    "%s: TypeScript writes the committed bytes",
    (name, c) => {
      expect(c.bytes()).toEqual(read(VECTORS, `${name}.bin`));
    },
  );

  test("every committed vector has a case and a JSON form", () => {
    const names = readdirSync(VECTORS)
      .filter((f) => f.endsWith(".bin"))
      .map((f) => f.slice(0, -4));
    expect(names.sort()).toEqual(VECTOR_CASES.map((c) => c.name).sort());
    for (const name of names) expect(existsSync(join(VECTORS, `${name}.json`))).toBe(true);
  });

  test.each(VECTOR_CASES.map((c) => [c.name]))(
    "%s: decode and encode give back the bytes",
    (name) => {
      const bytes = read(VECTORS, `${name}.bin`);
      expect(canonicalizePayload(bytes)).toEqual(bytes);
    },
  );

  test.each(VECTOR_CASES.map((c) => [c.name]))(
    "%s: the JSON form matches and converts back",
    (name) => {
      const bytes = read(VECTORS, `${name}.bin`);
      const json = readJson(VECTORS, `${name}.json`);
      expect(payloadToJson(bytes)).toEqual(json);
      expect(payloadFromJson(json)).toEqual(bytes);
    },
  );
});

describe("golden vectors of released versions decode forever", () => {
  const releases = readdirSync(GOLDEN).filter((name) => /^v\d+\.\d+$/.test(name));
  test("every release is there", () =>
    expect(releases).toEqual(expect.arrayContaining(["v1.0", "v1.1", "v1.2"])));
  for (const release of releases) {
    const dir = join(GOLDEN, release);
    test.each(readdirSync(dir).filter((f) => f.endsWith(".bin")))(`${release} %s`, (file) => {
      const bytes = read(dir, file);
      expect(payloadToJson(bytes)).toEqual(readJson(dir, file.replace(/\.bin$/, ".json")));
      expect(canonicalizePayload(bytes)).toEqual(bytes);
    });
  }
});
