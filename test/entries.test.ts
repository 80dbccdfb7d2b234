import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  AxisType,
  DeviceList,
  DTYPE_NAMES,
  decodeProgram,
  encodeProgram,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  PartitionSpec,
  PickledFunction,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  UNCONSTRAINED,
} from "../src";
import { range, roundTrip, smallMesh, specsBytes } from "./fixtures";

function kindsOf(leaves: ShapeDtypeStruct[]): (string | undefined)[] {
  return SpecsPayload.decode(specsBytes(leaves)).table!.entries.map((e) => e.kind?.$case);
}

function expectRoundTrip(leaves: ShapeDtypeStruct[]): ShapeDtypeStruct[] {
  const back = roundTrip(leaves);
  expect(back).toHaveLength(leaves.length);
  expect(back.map((leaf, i) => leaf.equals(leaves[i]))).toEqual(leaves.map(() => true));
  return back;
}

describe("each entry kind round-trips", () => {
  test("a 3-D mesh with transposed device order and every axis type", () => {
    const order = [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15];
    const mesh = new Mesh(
      new DeviceList(order),
      [2, 2, 4],
      ["a", "b", "c"],
      [AxisType.Explicit, AxisType.Manual, AxisType.Auto],
    );
    const leaf = new ShapeDtypeStruct(
      [8, 8],
      "bfloat16",
      new NamedSharding(mesh, new PartitionSpec("a")),
    );
    expect(kindsOf([leaf])).toEqual(["deviceList", "mesh", "namedSharding", "arraySpec"]);
    const [back] = expectRoundTrip([leaf]);
    const sharding = back.sharding as NamedSharding;
    expect(sharding.mesh.devices.ids).toEqual(order);
    expect(sharding.mesh.axisTypes).toEqual(["Explicit", "Manual", "Auto"]);
  });

  test("PartitionSpecs with tuples, None, UNCONSTRAINED, unreduced and reduced", () => {
    const { Auto, Explicit } = AxisType;
    const mesh = new Mesh(
      new DeviceList(range(16)),
      [2, 2, 2, 2],
      ["a", "b", "c", "d"],
      [Auto, Explicit, Explicit, Explicit],
    );
    const spec = PartitionSpec.create([["a", "b"], null, UNCONSTRAINED, "c"], { unreduced: ["d"] });
    const reduced = PartitionSpec.create(["a"], { reduced: ["c", "b"] });
    const leaves = [
      new ShapeDtypeStruct([4, 4, 4, 4], "float32", new NamedSharding(mesh, spec)),
      new ShapeDtypeStruct(
        [4],
        "float32",
        new NamedSharding(mesh, reduced, { memoryKind: "pinned_host" }),
      ),
    ];
    const back = expectRoundTrip(leaves);
    const backSpec = (back[0].sharding as NamedSharding).spec;
    expect(backSpec.entries).toEqual([["a", "b"], null, UNCONSTRAINED, "c"]);
    expect(backSpec.unreduced).toEqual(["d"]);
    expect((back[1].sharding as NamedSharding).spec.reduced).toEqual(["b", "c"]);
    expect((back[1].sharding as NamedSharding).memoryKind).toBe("pinned_host");
  });

  test("as in JAX, a one-axis tuple is the axis, an empty tuple is None, and 'device' is the default memory kind", () => {
    const mesh = smallMesh();
    expect(new PartitionSpec(["x"]).equals(new PartitionSpec("x"))).toBe(true);
    expect(new PartitionSpec([], ["x", "y"]).entries).toEqual([null, ["x", "y"]]);
    const device = new NamedSharding(mesh, new PartitionSpec(), { memoryKind: "device" });
    expect(device.memoryKind).toBeNull();
    expect(device.equals(new NamedSharding(mesh, new PartitionSpec()))).toBe(true);
    expect(new SingleDeviceSharding(3, { memoryKind: "device" }).memoryKind).toBeNull();
  });

  test("SingleDeviceSharding with and without a memory kind", () => {
    const leaves = [
      new ShapeDtypeStruct([3], "int4", new SingleDeviceSharding(0)),
      new ShapeDtypeStruct(
        [3],
        "int4",
        new SingleDeviceSharding(5, { memoryKind: "unpinned_host" }),
      ),
    ];
    expect(kindsOf(leaves)).toEqual([
      "singleDeviceSharding",
      "arraySpec",
      "singleDeviceSharding",
      "arraySpec",
    ]);
    expectRoundTrip(leaves);
  });

  test("GSPMDSharding: iota and explicit tiles, replicated, maximal", () => {
    const devices = new DeviceList([8, 9, 10, 11, 12, 13, 14, 15]);
    const tiled = new GSPMDSharding(devices, {
      type: "other",
      tileDims: [2, 2, 2],
      tileDevices: [0, 2, 4, 6, 1, 3, 5, 7],
      replicateOnLastTileDim: true,
    });
    const explicit = new GSPMDSharding(devices, {
      type: "other",
      tileDims: [4, 2],
      tileDevices: [3, 1, 0, 2, 7, 5, 6, 4],
    });
    const leaves = [
      new ShapeDtypeStruct([8, 8], "float8_e4m3fn", tiled),
      new ShapeDtypeStruct([8, 8], "float8_e5m2", explicit),
      new ShapeDtypeStruct([8], "float32", new GSPMDSharding(devices, { type: "replicated" })),
      new ShapeDtypeStruct(
        [8],
        "float32",
        new GSPMDSharding(devices, { type: "maximal", tileDims: [1], tileDevices: [3] }),
      ),
    ];
    const table = SpecsPayload.decode(specsBytes(leaves)).table!.entries;
    const tiles = table.flatMap((e) =>
      e.kind?.$case === "gspmdSharding" ? [e.kind.value.tileAssignment?.devices?.$case] : [],
    );
    expect(tiles).toEqual(["iota", "explicit", undefined, "explicit"]);
    expectRoundTrip(leaves);
  });

  test("GSPMDSharding that JAX puts on no array travels as a shared object", () => {
    const devices = new DeviceList([8, 9, 10, 11, 12, 13, 14, 15]);
    const manual = new GSPMDSharding(devices, { type: "manual" }, { memoryKind: "pinned_host" });
    const typed = new GSPMDSharding(devices, {
      type: "other",
      tileDims: [4, 2],
      tileDevices: [3, 1, 0, 2, 7, 5, 6, 4],
      lastTileDims: ["manual"],
    });
    const inputs = treeFlatten<ShapeDtypeStruct>([]);
    const program = {
      function: new PickledFunction(new Uint8Array([0x80, 5, 0x2e]), [manual, typed]),
      inputs,
      devices,
    };
    const refs = (decodeProgram(encodeProgram(program)).function as PickledFunction).refs;
    expect(refs.map((ref, i) => ref.equals([manual, typed][i]))).toEqual([true, true]);
    const onLeaf = new ShapeDtypeStruct([8], "float32", manual);
    expect(() => specsBytes([onLeaf])).toThrow(/manual/);
  });

  test("every dtype, shapes, scalars and weak types", () => {
    const keyType = { impl: "threefry2x32", keyShape: [2] };
    const leaves = DTYPE_NAMES.map(
      (dtype, i) =>
        new ShapeDtypeStruct(i % 3 ? [i, 2] : [], dtype, null, {
          weakType: i % 2 === 0,
          keyType: dtype === "key" ? keyType : null,
        }),
    );
    const back = expectRoundTrip(leaves);
    expect(back.map((l) => l.dtype)).toEqual(DTYPE_NAMES);
    expect(back[0].weakType).toBe(true);
    expect(back[1].weakType).toBe(false);
    expect(back[0].sharding).toBeNull();
  });

  test("dimensions up to 2^53-1", () => {
    expectRoundTrip([new ShapeDtypeStruct([Number.MAX_SAFE_INTEGER, 0], "uint8")]);
  });
});
