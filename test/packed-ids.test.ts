import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { DecodeError, DeviceList, decodeSpecs, Mesh, NamedSharding, PartitionSpec } from "../src";
import { ShapeDtypeStruct } from "../src/model/shape-dtype-struct";
import { type IdForm, type PackedRecord, readPackedIds } from "../src/packed-ids";
import { specsBytes, toBytes, validPayload } from "./fixtures";
import { seededRandom } from "./support/seeded-random";

/** A value whose varint is 1 to 5 bytes long, each length as likely. */
function anyWidth(random: () => number): number {
  const bits = [7, 14, 21, 28, 32][Math.floor(random() * 5)];
  return Math.floor(random() * 2 ** bits) >>> 0;
}

function record(bytes: Uint8Array, form: IdForm, entry = 0): PackedRecord {
  let count = 0;
  for (const b of bytes) if (b < 0x80) count++;
  return { entry, form, lengthAt: 0, from: 0, to: bytes.length, count, whole: true };
}

/** The values as the generated decoder reads them, with BinaryReader. */
function generated(bytes: Uint8Array, form: IdForm): number[] {
  const reader = new BinaryReader(bytes);
  const values: number[] = [];
  while (reader.pos < reader.len) values.push(form === "plain" ? reader.uint32() : reader.sint32());
  return values;
}

describe("packed device ids read ahead", () => {
  test("give what BinaryReader gives, varint by varint, on random lists of every width", () => {
    const random = seededRandom(18);
    for (let t = 0; t < 500; t++) {
      const writer = new BinaryWriter();
      const n = 256 + Math.floor(random() * 50); // shorter lists are not read ahead
      for (let i = 0; i < n; i++) writer.uint32(anyWidth(random));
      const bytes = writer.finish();
      for (const form of ["plain", "delta"] as const) {
        const read = readPackedIds(bytes, [record(bytes, form)]).get(0);
        if (!read) throw new Error(`list ${t} (${form}) was not read`);
        const values = Array.from(read.values, (v) => (form === "plain" ? v >>> 0 : v));
        expect(values).toEqual(generated(bytes, form));
      }
    }
  });

  test("leave a list with a varint longer than 5 bytes to the generated decoder", () => {
    const writer = new BinaryWriter();
    for (let i = 0; i < 300; i++) writer.uint32(i);
    const bytes = writer.int32(-1).finish(); // int32 -1 is 10 bytes
    expect(readPackedIds(bytes, [record(bytes, "plain")]).size).toBe(0);
  });

  test("leave an entry with more than one record, or a record not whole, to the generated decoder", () => {
    const writer = new BinaryWriter();
    for (let i = 0; i < 300; i++) writer.uint32(i);
    const bytes = writer.finish();
    const one = record(bytes, "plain");
    expect(readPackedIds(bytes, [one, { ...one }]).size).toBe(0);
    expect(readPackedIds(bytes, [{ ...one, whole: false }]).size).toBe(0);
    expect([...readPackedIds(bytes, [one, { ...one, entry: 1 }]).keys()]).toEqual([0, 1]);
  });

  test("leave a short list to the generated decoder", () => {
    const bytes = new BinaryWriter().uint32(1).uint32(2).finish();
    expect(readPackedIds(bytes, [record(bytes, "plain")]).size).toBe(0);
  });

  test("decode shuffled device lists, plain and delta, to the ids encoded", () => {
    const random = seededRandom(7);
    for (const n of [8, 200, 5000]) {
      const ids = Array.from({ length: n }, (_, i) => i * 3);
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [ids[i], ids[j]] = [ids[j], ids[i]];
      }
      const mesh = new Mesh(new DeviceList(ids), [n / 8, 8], ["a", "b"]);
      const leaf = new ShapeDtypeStruct(
        [8],
        "float32",
        new NamedSharding(mesh, new PartitionSpec()),
      );
      const bytes = specsBytes([leaf]);
      const message = SpecsPayload.decode(bytes).table?.entries[0].kind;
      if (message?.$case !== "deviceList") throw new Error("entry 0 is not a device list");
      expect(["plain", "delta"]).toContain(message.value.ids?.$case);
      const back = decodeSpecs(bytes).leaves[0].sharding as NamedSharding;
      expect(back.mesh.devices.ids).toEqual(ids);
    }
  });

  test("report a repeated id at its position in both forms", () => {
    const payload = validPayload();
    const entry = payload.table?.entries[0];
    if (entry?.kind?.$case !== "deviceList") throw new Error("entry 0 is not a device list");
    // Short (read by the generated decoder) and long (read ahead): the same error.
    const cases: [number[], number][] = [
      [[3, 1, 4, 1, 5, 9, 2, 6], 3],
      [[...Array.from({ length: 300 }, (_, i) => 2 * i), 20], 300],
    ];
    for (const [ids, at] of cases) {
      const forms = [
        { ids: { $case: "plain" as const, value: { ids } } },
        {
          ids: {
            $case: "delta" as const,
            value: { deltas: ids.map((id, i) => id - (ids[i - 1] ?? 0)) },
          },
        },
      ];
      for (const form of forms) {
        entry.kind.value = form;
        const error = (() => {
          try {
            decodeSpecs(toBytes(payload));
          } catch (e) {
            return e;
          }
          throw new Error("decoded a list with a repeated id");
        })();
        expect(error).toBeInstanceOf(DecodeError);
        const field = form.ids.$case === "plain" ? "plain.ids" : "delta.deltas";
        expect((error as DecodeError).path).toBe(`table[0].device_list.${field}[${at}]`);
        expect((error as DecodeError).code).toBe("duplicate-device");
      }
    }
  });
});
