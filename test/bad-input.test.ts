import type { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import { DecodeError, type DecodeErrorCode, decodeProgram, decodeSpecs } from "../src";
import { toBytes, validPayload } from "./fixtures";

// validPayload's table: [0] device list 0..7, [1] 2x4 mesh (x, y), [2] NamedSharding P("x", "y"), [3] ArraySpec.
type Entries = NonNullable<SpecsPayload["table"]>["entries"];

function entryValue<K extends string>(entries: Entries, index: number, kind: K) {
  const entry = entries[index].kind;
  if (entry?.$case !== kind) throw new Error(`entry ${index} is not ${kind}`);
  // biome-ignore lint/suspicious/noExplicitAny: tests reach into the union to break it
  return entry.value as any;
}

function broken(edit: (p: SpecsPayload, entries: Entries) => void): Uint8Array {
  const payload = validPayload();
  edit(payload, payload.table!.entries);
  return toBytes(payload);
}

function expectDecodeError(
  bytes: Uint8Array,
  path: string,
  code: DecodeErrorCode,
  message?: RegExp,
) {
  let caught: unknown;
  try {
    decodeSpecs(bytes);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(DecodeError);
  const error = caught as DecodeError;
  expect({ path: error.path, code: error.code }).toEqual({ path, code });
  expect(error.message.startsWith(`${path}: `)).toBe(true);
  if (message) expect(error.message).toMatch(message);
}

const cases: [string, () => Uint8Array, string, DecodeErrorCode, RegExp?][] = [
  [
    "a leaf reference out of range",
    () =>
      broken((p) => {
        p.specs!.leaves[0] = 9;
      }),
    "specs.leaves[0]",
    "reference-out-of-range",
    /reference 9 is past the end of a table of 4/,
  ],
  [
    "a forward reference",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").deviceList = 1;
      }),
    "table[1].mesh.device_list",
    "forward-reference",
    /entry 1 refers to entry 1/,
  ],
  [
    "a reference to the wrong kind",
    () =>
      broken((_, e) => {
        entryValue(e, 2, "namedSharding").mesh = 0;
      }),
    "table[2].named_sharding.mesh",
    "wrong-entry-kind",
    /entry 0 is a DeviceList, not a Mesh/,
  ],
  [
    "a missing reference",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").deviceList = undefined;
      }),
    "table[1].mesh.device_list",
    "missing",
  ],
  [
    "a leaf that is not an ArraySpec",
    () =>
      broken((p) => {
        p.specs!.leaves[1] = 2;
      }),
    "specs.leaves[1]",
    "wrong-entry-kind",
  ],
  [
    "mesh sizes that do not match the devices",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").axisSizes = [2, 2];
      }),
    "table[1].mesh.axis_sizes",
    "invalid-mesh",
    /hold 4 devices, but the device list has 8/,
  ],
  [
    "mesh names that do not match the sizes",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").axisNames = ["x"];
      }),
    "table[1].mesh",
    "invalid-mesh",
    /axis counts disagree/,
  ],
  [
    "a repeated mesh axis name",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").axisNames = ["x", "x"];
      }),
    "table[1].mesh.axis_names[1]",
    "invalid-mesh",
    /repeats/,
  ],
  [
    "duplicate device ids",
    () =>
      broken((_, e) => {
        e[0].kind = {
          $case: "deviceList",
          value: { ids: { $case: "plain", value: { ids: [0, 1, 2, 3, 4, 5, 6, 1] } } },
        };
      }),
    "table[0].device_list.plain.ids[7]",
    "duplicate-device",
    /device id 1 appears twice/,
  ],
  [
    "a device id above int32",
    () =>
      broken((_, e) => {
        e[0].kind = {
          $case: "deviceList",
          value: { ids: { $case: "delta", value: { deltas: [2 ** 31 - 4, 1, 1, 1, 1, 1, 1, 1] } } },
        };
      }),
    "table[0].device_list.delta.deltas[4]",
    "invalid-value",
  ],
  [
    "an iota whose perm is no permutation",
    () =>
      broken((_, e) => {
        entryValue(e, 0, "deviceList").ids.value.iota = {
          reshapeDims: [2, 4],
          transposePerm: [1, 1],
        };
      }),
    "table[0].device_list.iota.iota.transpose_perm",
    "invalid-iota",
  ],
  [
    "an unknown PartitionSpec axis",
    () =>
      broken((_, e) => {
        entryValue(e, 2, "namedSharding").spec.entries[0].axes = ["z"];
      }),
    "table[2].named_sharding.spec.entries[0].axes[0]",
    "unknown-axis",
    /axis "z" is not a mesh axis/,
  ],
  [
    "a repeated PartitionSpec axis",
    () =>
      broken((_, e) => {
        entryValue(e, 2, "namedSharding").spec.unreduced = ["x"];
      }),
    "table[2].named_sharding.spec.unreduced[0]",
    "repeated-axis",
    /axis "x" is used twice/,
  ],
  [
    "an unknown dtype",
    () =>
      broken((_, e) => {
        entryValue(e, 3, "arraySpec").dtype = 999;
      }),
    "table[3].array_spec.dtype",
    "unknown-enum",
    /unknown dtype 999/,
  ],
  [
    "an unknown axis type",
    () =>
      broken((_, e) => {
        entryValue(e, 1, "mesh").axisTypes = [1, 7];
      }),
    "table[1].mesh.axis_types[1]",
    "unknown-enum",
  ],
  [
    "an unknown node kind",
    () =>
      broken((p) => {
        p.specs!.treedef!.kinds[1] = 42 as NodeKind;
      }),
    "specs.treedef.kinds[1]",
    "unknown-enum",
  ],
  [
    "a newer major version",
    () =>
      broken((p) => {
        p.header!.majorVersion = 2;
      }),
    "header.major_version",
    "unsupported-version",
    /major version 2; this decoder reads 1/,
  ],
  [
    "no header",
    () =>
      broken((p) => {
        p.header = undefined;
      }),
    "header",
    "unsupported-version",
  ],
  [
    "a program payload's header",
    () =>
      broken((p) => {
        p.header!.kind = 2;
      }),
    "header.kind",
    "wrong-payload-kind",
  ],
  [
    "a tree with more leaves than the payload",
    () =>
      broken((p) => {
        p.specs!.leaves.pop();
      }),
    "specs.leaves",
    "invalid-tree",
  ],
  [
    "a tree whose arity overruns its nodes",
    () =>
      broken((p) => {
        p.specs!.treedef!.arities[0] = 1e9;
      }),
    "specs.treedef.arities[0]",
    "invalid-tree",
    /claims 1000000000 children/,
  ],
  [
    "a tree with nodes after its end",
    () =>
      broken((p) => {
        p.specs!.treedef!.kinds.push(NodeKind.NODE_KIND_NONE);
      }),
    "specs.treedef.kinds[3]",
    "invalid-tree",
  ],
  [
    "a tree that stops early",
    () =>
      broken((p) => {
        Object.assign(p.specs!.treedef!, { kinds: [4, 4, 1], arities: [2, 1] });
      }),
    "specs.treedef.kinds",
    "invalid-tree",
  ],
  ["truncated bytes", () => toBytes(validPayload()).subarray(0, 20), "payload", "malformed"],
  [
    "bytes that are not protobuf",
    () => new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
    "payload",
    "malformed",
  ],
  ["an empty payload", () => new Uint8Array(), "header", "unsupported-version"],
];

describe("bad input throws a DecodeError that names the path", () => {
  test.each(cases)("%s", (...[, bytes, path, code, message]) =>
    expectDecodeError(bytes(), path, code, message),
  );

  test("a specs payload is not a program", () => {
    expect(() => decodeProgram(toBytes(validPayload()))).toThrow(
      expect.objectContaining({ code: "wrong-payload-kind", path: "header.kind" }),
    );
  });

  test("a payload newer than an agreed minor version is refused", () => {
    const bytes = broken((p) => {
      p.header!.minorVersion = 3;
    });
    expect(decodeSpecs(bytes).leaves).toHaveLength(2);
    expect(() => decodeSpecs(bytes, { maxMinorVersion: 2 })).toThrow(
      expect.objectContaining({ code: "unsupported-version", path: "header.minor_version" }),
    );
  });

  test("every truncation of a valid payload fails cleanly or decodes", () => {
    const bytes = toBytes(validPayload());
    for (let n = 0; n < bytes.length; n++) {
      try {
        decodeSpecs(bytes.subarray(0, n));
      } catch (error) {
        expect(error).toBeInstanceOf(DecodeError);
      }
    }
  });
});
