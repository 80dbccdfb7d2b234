import { ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { Entry } from "../gen/ts/colocated/v1/table";
import {
  decodeProgram,
  decodeSpecs,
  encodeProgram,
  encodeSpecs,
  type NamedSharding,
  ShapeDtypeStruct,
  treeFlatten,
  UnknownEntry,
} from "../src";
import { exampleProgram } from "../src/example";
import { tableSlot } from "../src/table/table-slots";
import { toBytes, validPayload } from "./fixtures";

// Field numbers no colocated.v1 message uses, as a newer minor version might add them.
const varintField = (field: number, value: number) => ({ [field * 8]: [new Uint8Array([value])] });
const bytesField = (field: number, bytes: number[]) => ({
  [field * 8 + 2]: [new Uint8Array([bytes.length, ...bytes])],
});

/** A newer minor version's payload: new fields everywhere and two entries of a new kind. */
function newerPayload(): Uint8Array {
  const payload = validPayload();
  payload.header!.minorVersion = 4;
  payload._unknownFields = bytesField(20, [1, 2, 3]);
  payload.header!._unknownFields = varintField(9, 1);
  payload.table!._unknownFields = varintField(5, 2);
  payload.specs!._unknownFields = varintField(6, 3);
  payload.specs!.treedef!._unknownFields = bytesField(12, [104, 105]);
  const [devices, mesh, sharding, spec] = payload.table!.entries;
  if (mesh.kind?.$case !== "mesh" || spec.kind?.$case !== "arraySpec")
    throw new Error("fixture changed");
  mesh.kind.value._unknownFields = varintField(11, 7);
  // Entry field 30: a sharding kind this schema does not know, and one nothing known refers to.
  const newSharding: Entry = { kind: undefined, _unknownFields: bytesField(30, [8, 1]) };
  const loner: Entry = { kind: undefined, _unknownFields: bytesField(31, [8, 2]) };
  const other: Entry = { kind: { $case: "arraySpec", value: { ...spec.kind.value, sharding: 4 } } };
  payload.table!.entries = [devices, mesh, sharding, spec, newSharding, loner, other];
  payload.specs!.leaves = [3, 6];
  return toBytes(payload);
}

describe("nothing from a newer minor version is lost", () => {
  test("unknown fields and unknown entry kinds survive decode and encode", () => {
    const bytes = newerPayload();
    const { treedef, leaves } = decodeSpecs(bytes);
    expect(leaves[1].sharding).toBeInstanceOf(UnknownEntry);
    expect(encodeSpecs(treedef, leaves)).toEqual(bytes);
  });

  test("an unknown entry re-encodes unchanged, even in a new table", () => {
    const { leaves } = decodeSpecs(newerPayload());
    const moved = [new ShapeDtypeStruct([1], "int8"), leaves[1], leaves[0]];
    const message = SpecsPayload.decode(encodeSpecs(treeFlatten(moved).treedef, moved));
    const kinds = message.table!.entries.map((e) => e.kind?.$case ?? "unknown");
    expect(kinds).toEqual([
      "arraySpec",
      "unknown",
      "arraySpec",
      "deviceList",
      "mesh",
      "namedSharding",
      "arraySpec",
    ]);
    expect(Entry.encode(message.table!.entries[1]).finish()).toEqual(
      (leaves[1].sharding as UnknownEntry).bytes,
    );
    // The mesh entry keeps its new field wherever it lands.
    const mesh = message.table!.entries[4].kind;
    expect(mesh?.$case === "mesh" && mesh.value._unknownFields).toEqual(varintField(11, 7));
  });

  test("an object with unknown fields keeps an entry of its own, before or after an equal plain one", () => {
    const [newer] = decodeSpecs(newerPayload()).leaves;
    const [plain] = decodeSpecs(toBytes(validPayload())).leaves;
    const meshFields = (leaf: ShapeDtypeStruct) => {
      const bytes = encodeSpecs(treeFlatten([leaf]).treedef, [leaf]);
      const mesh = SpecsPayload.decode(bytes).table!.entries.find((e) => e.kind?.$case === "mesh");
      return mesh?.kind?.$case === "mesh" ? (mesh.kind.value._unknownFields ?? {}) : undefined;
    };
    // The newer mesh has a slot of its own (its entry carries its fields), the plain one the
    // slot of its value; each keeps its entry from one encode to the next.
    const meshOf = (leaf: ShapeDtypeStruct) => (leaf.sharding as NamedSharding).mesh;
    expect(tableSlot(meshOf(newer))).not.toBe(tableSlot(meshOf(plain)));
    expect(meshFields(plain)).toEqual({});
    expect(meshFields(newer)).toEqual(varintField(11, 7));
    expect(meshFields(plain)).toEqual({});
    expect(meshFields(newer)).toEqual(varintField(11, 7));
  });

  test("known objects from a newer payload still compare equal to plain ones", () => {
    const [leaf] = decodeSpecs(newerPayload()).leaves;
    const [plain] = decodeSpecs(toBytes(validPayload())).leaves;
    expect(leaf.equals(plain)).toBe(true);
    expect(
      (leaf.sharding as NamedSharding).mesh.equals((plain.sharding as NamedSharding).mesh),
    ).toBe(true);
  });

  test("programs carry their unknown fields too", () => {
    const message = ProgramPayload.decode(encodeProgram(exampleProgram({ leaves: 8 })));
    message._unknownFields = bytesField(40, [9]);
    message.function!._unknownFields = varintField(7, 1);
    const bytes = ProgramPayload.encode(message).finish();
    expect(encodeProgram(decodeProgram(bytes))).toEqual(bytes);
  });
});
