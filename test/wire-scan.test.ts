import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type DescFile, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { default_max, Limit, LimitSchema, limit } from "../gen/es/colocated/v1/limit_pb";
import { DecodeError } from "../src";
import { DEFAULT_LIMITS, type DecodeLimits, limitName } from "../src/limits";
import { scanWire } from "../src/wire-scan";

/**
 * The limits are declared once, in proto/colocated/v1/limit.proto and the `(limit)` option of
 * each repeated field, and both languages read them from their generated descriptors. Both
 * compare what they read with test/vectors/limits.json, which this test writes with
 * UPDATE_VECTORS=1 (npm run vectors:update); python/tests/test_wire_scan.py reads it too.
 */

const UPDATE = process.env.UPDATE_VECTORS === "1";
const LIMITS_JSON = join(__dirname, "vectors", "limits.json");
const GEN = join(__dirname, "..", "gen", "es", "colocated", "v1");

interface LimitsJson {
  /** Each Limit value's default. */
  defaults: Record<string, number>;
  /** The limit of every repeated field of colocated.v1, by "message.field". */
  fields: Record<string, string>;
}

/** Every file gen/es holds for colocated.v1, as protoc-gen-es wrote them. */
function files(): DescFile[] {
  const found: DescFile[] = [];
  for (const name of readdirSync(GEN).filter((f) => f.endsWith("_pb.ts"))) {
    const module: Record<string, unknown> = require(join(GEN, name));
    for (const value of Object.values(module)) {
      if ((value as DescFile | undefined)?.kind === "file") found.push(value as DescFile);
    }
  }
  return found;
}

function messages(): DescMessage[] {
  const all: DescMessage[] = [];
  const add = (message: DescMessage) => {
    all.push(message);
    message.nestedMessages.forEach(add);
  };
  for (const file of files()) file.messages.forEach(add);
  return all;
}

const enumName = (value: Limit) => LimitSchema.value[value].name;

function read(): LimitsJson {
  const defaults = Object.fromEntries(
    LimitSchema.values
      .filter((value) => value.number !== Limit.UNSPECIFIED)
      .map((value) => [value.name, getOption(value, default_max)]),
  );
  const fields = messages()
    .flatMap((message) => message.fields.filter((field) => field.fieldKind === "list"))
    .map((field) => [`${field.parent.typeName}.${field.name}`, enumName(getOption(field, limit))])
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return { defaults, fields: Object.fromEntries(fields) };
}

// The fields of DecodeLimits, checked against the interface by the compiler.
const DECODE_LIMITS: Record<keyof DecodeLimits, true> = {
  maxPayloadBytes: true,
  maxTableEntries: true,
  maxDevicesPerList: true,
  maxRank: true,
  maxTreeNodes: true,
  maxTreeDepth: true,
  maxUnknownFields: true,
};

describe("the limits, read from the descriptors", () => {
  if (UPDATE) {
    test("test/vectors/limits.json is written", () => {
      writeFileSync(LIMITS_JSON, `${JSON.stringify(read(), null, 2)}\n`);
    });
  }

  test("are those of test/vectors/limits.json, which Python reads too", () => {
    const committed: LimitsJson = JSON.parse(readFileSync(LIMITS_JSON, "utf8"));
    expect(read()).toEqual(committed);
  });

  test("every repeated field has a limit", () => {
    const fields = Object.entries(read().fields);
    expect(fields.length).toBeGreaterThan(0);
    expect(fields.filter(([, name]) => name === enumName(Limit.UNSPECIFIED))).toEqual([]);
  });

  test("DecodeLimits has one field per Limit value, and DEFAULT_LIMITS its default", () => {
    const { defaults } = read();
    const byField = Object.fromEntries(
      Object.entries(defaults).map(([name, value]) => [
        limitName(LimitSchema.values.find((v) => v.name === name)?.number ?? Limit.UNSPECIFIED),
        value,
      ]),
    );
    expect(Object.keys(byField).sort()).toEqual(Object.keys(DECODE_LIMITS).sort());
    expect({ ...DEFAULT_LIMITS }).toEqual(byField);
  });
});

/** Two values of a repeated field, each as short as its wire type allows. */
function twoValues(message: DescMessage, name: string): Uint8Array {
  const field = message.fields.find((f) => f.name === name);
  if (field?.fieldKind !== "list") throw new Error(`${message.typeName}.${name}?`);
  const delimited =
    field.listKind === "message" ||
    field.scalar === ScalarType.STRING ||
    field.scalar === ScalarType.BYTES;
  const record = delimited ? [(field.number << 3) | 2, 0] : [field.number << 3, 0];
  return new Uint8Array([...record, ...record]);
}

describe("the wire scan", () => {
  test.each(Object.entries(read().fields))("counts %s against %s", (path, limitEnum) => {
    const message = messages().find((m) => path.startsWith(`${m.typeName}.`));
    if (!message) throw new Error(`no message for ${path}`);
    const name = path.slice(message.typeName.length + 1);
    const value = LimitSchema.values.find((v) => v.name === limitEnum);
    if (!value) throw new Error(`no limit ${limitEnum}`);
    const key = limitName(value.number);
    const bytes = twoValues(message, name);
    expect(scanWire(bytes, message, { ...DEFAULT_LIMITS, [key]: 2 })).toBe(0);
    let error: unknown;
    try {
      scanWire(bytes, message, { ...DEFAULT_LIMITS, [key]: 1 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ code: "limit-exceeded", path: name });
  });
});
