import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type FieldType, WIRE_SCHEMA } from "../src/validate/wire-schema";

interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName?: string;
}

const ROOT = join(__dirname, "..");
const PYTHON_NAMES: Record<string, string> = {
  maxTableEntries: "max_table_entries",
  maxDevicesPerList: "max_devices_per_list",
  maxRank: "max_rank",
  maxTreeNodes: "max_tree_nodes",
};

/** The schema's messages as buf compiles them from proto/. */
function compiled(): Map<string, FieldDescriptor[]> {
  const json = execFileSync("npx", ["buf", "build", "-o", "-#format=json"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  const messages = new Map<string, FieldDescriptor[]>();
  for (const file of JSON.parse(json).file) {
    for (const message of file.messageType ?? []) messages.set(message.name, message.field ?? []);
  }
  return messages;
}

function typeOf(field: FieldDescriptor): FieldType {
  if (field.type === "TYPE_MESSAGE") {
    return { message: field.typeName?.split(".").pop() } as FieldType;
  }
  if (field.type === "TYPE_STRING") return "string";
  if (field.type === "TYPE_BYTES") return "bytes";
  return "varint";
}

describe("the wire scan's schema", () => {
  test("is the schema of proto/colocated/v1, every repeated field with a limit", () => {
    const messages = compiled();
    for (const [name, fields] of Object.entries(WIRE_SCHEMA)) {
      const want = Object.fromEntries(
        (messages.get(name) ?? []).map((f) => {
          const repeated = f.label === "LABEL_REPEATED";
          return [f.number, { name: f.name, type: typeOf(f), repeated }];
        }),
      );
      const have = Object.fromEntries(
        Object.entries(fields).map(([number, f]) => [
          number,
          { name: f.name, type: f.type, repeated: f.limit !== undefined },
        ]),
      );
      expect({ name, fields: have }).toEqual({ name, fields: want });
    }
  });

  test("Python limits the same repeated fields by the same limits", () => {
    const source = readFileSync(join(ROOT, "python", "colocated_wire", "wire_scan.py"), "utf8");
    const python = Object.fromEntries(
      [...source.matchAll(/^ {4}"(\w+\.\w+)": "(\w+)",$/gm)].map((m) => [m[1], m[2]]),
    );
    const ours: Record<string, string> = {};
    for (const [message, fields] of Object.entries(WIRE_SCHEMA)) {
      for (const field of Object.values(fields)) {
        if (field.limit) ours[`${message}.${field.name}`] = PYTHON_NAMES[field.limit];
      }
    }
    expect(python).toEqual(ours);
  });
});
