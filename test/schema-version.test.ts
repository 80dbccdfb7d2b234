import type { DescEnum, DescMessage } from "@bufbuild/protobuf";
import { file_colocated_v1_payload } from "../gen/es/colocated/v1/payload_pb";
import { DTypeSchema, file_colocated_v1_table } from "../gen/es/colocated/v1/table_pb";
import { file_colocated_v1_tree } from "../gen/es/colocated/v1/tree_pb";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  decodeSpecs,
  EncodeError,
  encodeSpecs,
  SCHEMA_MINOR_VERSION,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import { canonicalizePayload } from "../src/canonicalize";
import { describeLeaf } from "../src/inspector/describe-leaf";
import { fieldSince, valueSince } from "../src/schema-version";

const encode = (leaves: ShapeDtypeStruct[], targetMinorVersion?: number) => {
  const { treedef } = treeFlatten<ShapeDtypeStruct>(leaves);
  return encodeSpecs(treedef, leaves, { targetMinorVersion });
};
const fry = (shape: number[]) =>
  new ShapeDtypeStruct(shape, "key", null, { keyType: { impl: "threefry2x32", keyShape: [2] } });

function encodeError(run: () => unknown): EncodeError {
  try {
    run();
  } catch (error) {
    if (error instanceof EncodeError) return error;
    throw error;
  }
  throw new Error("it encoded");
}

describe("colocated.v1.1", () => {
  test("the newest since the schema declares is the version this library writes", () => {
    // Every enum value and every field of the payload's files, nested ones included.
    const sinces: number[] = [];
    const visit = (message: DescMessage): void => {
      sinces.push(...message.fields.map(fieldSince));
      message.nestedEnums.forEach(visitEnum);
      message.nestedMessages.forEach(visit);
    };
    const visitEnum = (e: DescEnum) => sinces.push(...e.values.map((v) => valueSince(e, v.number)));
    for (const file of [
      file_colocated_v1_payload,
      file_colocated_v1_table,
      file_colocated_v1_tree,
    ]) {
      file.enums.forEach(visitEnum);
      file.messages.forEach(visit);
    }
    expect(Math.max(...sinces)).toBe(SCHEMA_MINOR_VERSION);
    expect(Math.max(...DTypeSchema.values.map((v) => valueSince(DTypeSchema, v.number)))).toBe(1);
  });

  test("a 1.1 dtype at target 1.0 is an EncodeError naming the version", () => {
    const error = encodeError(() => encode([new ShapeDtypeStruct([2], "float0")], 0));
    expect(error.message).toBe(
      "specs.leaves[0].dtype: dtype float0 needs colocated.v1.1; the target is 1.0",
    );
    expect(encodeError(() => encode([fry([])], 0)).message).toBe(
      "specs.leaves[0].dtype: dtype key needs colocated.v1.1; the target is 1.0",
    );
  });

  test("1.0 content at target 1.0 and at the default differ only in the header's minor", () => {
    const leaves = [new ShapeDtypeStruct([2, 3], "bfloat16")];
    const old = encode(leaves, 0);
    const current = SpecsPayload.decode(encode(leaves));
    expect(current.header?.minorVersion).toBe(SCHEMA_MINOR_VERSION);
    expect(SpecsPayload.decode(encode(leaves, 1)).header?.minorVersion).toBe(1);
    current.header = { ...current.header!, minorVersion: 0 };
    expect(SpecsPayload.encode(current).finish()).toEqual(old);
    expect(canonicalizePayload(old)).toEqual(old);
  });

  test("a target this encoder cannot write is refused", () => {
    const leaves = [new ShapeDtypeStruct([2], "int8")];
    expect(encodeError(() => encode(leaves, SCHEMA_MINOR_VERSION + 1)).path).toBe(
      "header.minor_version",
    );
    expect(encodeError(() => encode(leaves, -1)).path).toBe("header.minor_version");
  });

  test("a key array needs its key type, and only a key array has one", () => {
    expect(encodeError(() => encode([new ShapeDtypeStruct([2], "key")])).message).toBe(
      "specs.leaves[0].key_type: a key array needs its key type",
    );
    const keyed = new ShapeDtypeStruct([2], "int8", null, { keyType: fry([]).keyType });
    expect(encodeError(() => encode([keyed])).path).toBe("specs.leaves[0].key_type");
    const empty = new ShapeDtypeStruct([], "key", null, { keyType: { impl: "", keyShape: [] } });
    expect(encodeError(() => encode([empty])).path).toBe("specs.leaves[0].key_type.impl");
  });

  test("key arrays round-trip, dedup by key type, and print as JAX prints them", () => {
    const custom = new ShapeDtypeStruct([4], "key", null, {
      keyType: { impl: "custom_prng", keyShape: [3] },
    });
    const urbg = new ShapeDtypeStruct([4], "key", null, {
      keyType: { impl: "unsafe_rbg", keyShape: [4] },
    });
    const leaves = [fry([3]), fry([3]), custom, urbg];
    const back = decodeSpecs(encode(leaves)).leaves;
    expect(back.map((l) => l.key)).toEqual(leaves.map((l) => l.key));
    expect(back[2].keyType).toEqual({ impl: "custom_prng", keyShape: [3] });
    expect(back.map((l) => l.dtypeString)).toEqual([
      "key<fry>",
      "key<fry>",
      "key<custom_prng>",
      "key<urbg>",
    ]);
    expect(describeLeaf(back[0])).toBe("key<fry>[3] no sharding");
    expect(fry([3]).key).not.toBe(custom.key);
  });
});
