import type { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  DEFAULT_LIMITS,
  DecodeError,
  decodeSpecs,
  encodeSpecs,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import { toBytes, validPayload } from "./fixtures";

function payloadWith(edit: (p: SpecsPayload) => void): Uint8Array {
  const payload = validPayload();
  edit(payload);
  return toBytes(payload);
}

function codeOf(run: () => unknown): { path: string; code: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof DecodeError) return { path: error.path, code: error.code };
    throw error;
  }
  throw new Error("did not throw");
}

describe("decoding is bounded", () => {
  test("an iota that claims 2^40 devices is refused before it is materialized", () => {
    const bytes = payloadWith((p) => {
      p.table!.entries[0].kind = {
        $case: "deviceList",
        value: {
          ids: {
            $case: "iota",
            value: { offset: 0, iota: { reshapeDims: [1 << 20, 1 << 20], transposePerm: [0, 1] } },
          },
        },
      };
    });
    expect(bytes.length).toBeLessThan(100);
    const started = performance.now();
    expect(codeOf(() => decodeSpecs(bytes))).toEqual({
      path: "table[0].device_list.iota.iota.reshape_dims",
      code: "limit-exceeded",
    });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("a tile assignment that claims 2^60 tiles is refused", () => {
    const devices = {
      $case: "deviceList" as const,
      value: { ids: { $case: "plain" as const, value: { ids: [0] } } },
    };
    const gspmd = {
      $case: "gspmdSharding" as const,
      value: {
        deviceList: 0,
        type: 3,
        tileAssignment: {
          dims: [1 << 30, 1 << 30],
          devices: {
            $case: "iota" as const,
            value: { reshapeDims: [1 << 30, 1 << 30], transposePerm: [0, 1] },
          },
        },
        replicateOnLastTileDim: false,
        lastTileDims: [],
      },
    };
    const bytes = payloadWith((p) => {
      p.table!.entries = [{ kind: devices }, { kind: gspmd }];
      p.specs!.leaves = [];
      p.specs!.treedef = {
        kinds: [4],
        arities: [0],
        strings: [],
        dictKeys: [],
        nodeTypes: [],
        typeRefs: [],
        nodeData: [],
      };
    });
    expect(codeOf(() => decodeSpecs(bytes))).toEqual({
      path: "table[1].gspmd_sharding.tile_assignment.dims",
      code: "limit-exceeded",
    });
  });

  test("a tree nested beyond the depth limit is refused", () => {
    let tree: unknown = new ShapeDtypeStruct([1], "float32");
    for (let i = 0; i < DEFAULT_LIMITS.maxTreeDepth + 5; i++) tree = [tree];
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    const bytes = encodeSpecs(treedef, leaves);
    expect(codeOf(() => decodeSpecs(bytes))).toMatchObject({ code: "limit-exceeded" });
    expect(decodeSpecs(bytes, { limits: { maxTreeDepth: 2000 } }).leaves).toHaveLength(1);
  });

  test("configured limits on nodes, entries, devices and payload size", () => {
    const bytes = toBytes(validPayload());
    expect(codeOf(() => decodeSpecs(bytes, { limits: { maxTreeNodes: 2 } }))).toEqual({
      path: "specs.treedef.kinds",
      code: "limit-exceeded",
    });
    expect(codeOf(() => decodeSpecs(bytes, { limits: { maxTableEntries: 3 } }))).toEqual({
      path: "table.entries",
      code: "limit-exceeded",
    });
    expect(codeOf(() => decodeSpecs(bytes, { limits: { maxDevicesPerList: 4 } }))).toMatchObject({
      code: "limit-exceeded",
    });
    expect(codeOf(() => decodeSpecs(bytes, { limits: { maxPayloadBytes: 10 } }))).toEqual({
      path: "payload",
      code: "limit-exceeded",
    });
  });
});
