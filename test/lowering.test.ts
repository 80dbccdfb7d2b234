import {
  DeviceList,
  EncodeError,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  UNCONSTRAINED,
} from "../src";
import { range, smallMesh, specsBytes } from "./fixtures";

function lowering(leaf: ShapeDtypeStruct): () => Uint8Array {
  return () => specsBytes([leaf]);
}

const on = (mesh: Mesh, spec: PartitionSpec) =>
  new ShapeDtypeStruct([4], "float32", new NamedSharding(mesh, spec));

describe("lowering an impossible model throws before any bytes exist", () => {
  test("a mesh whose axis sizes do not multiply to its device count", () => {
    const mesh = new Mesh(new DeviceList(range(8)), [4, 4], ["x", "y"]);
    expect(lowering(on(mesh, new PartitionSpec()))).toThrow(
      new EncodeError(
        "specs.leaves[0].sharding.mesh",
        "axis sizes 4x4 hold 16 devices, but the device list has 8",
      ),
    );
  });

  test("a PartitionSpec naming an axis the mesh lacks", () => {
    expect(lowering(on(smallMesh(), new PartitionSpec("z")))).toThrow(
      /axis "z" is not a mesh axis/,
    );
  });

  test("a PartitionSpec naming one axis twice, in tuples or the reduced sets", () => {
    expect(lowering(on(smallMesh(), new PartitionSpec("x", ["y", "x"])))).toThrow(
      /axis "x" is used twice/,
    );
    const reduced = PartitionSpec.create(["x"], { reduced: ["x"] });
    expect(lowering(on(smallMesh(), reduced))).toThrow(/axis "x" is used twice/);
  });

  test("unreduced and reduced axes must be Explicit, and UNCONSTRAINED needs an Auto axis", () => {
    const explicit = new Mesh(
      new DeviceList(range(8)),
      [2, 4],
      ["x", "y"],
      ["Explicit", "Explicit"],
    );
    expect(lowering(on(smallMesh(), PartitionSpec.create([], { unreduced: ["x"] })))).toThrow(
      /unreduced axis "x" is Auto, not Explicit/,
    );
    expect(lowering(on(explicit, PartitionSpec.create(["x"], { reduced: ["y"] })))).not.toThrow();
    expect(lowering(on(explicit, new PartitionSpec(UNCONSTRAINED)))).toThrow(
      /UNCONSTRAINED needs a mesh with an Auto axis/,
    );
  });

  test("duplicate device ids, bad ids, unknown dtypes and shapes", () => {
    const dup = new Mesh(new DeviceList([0, 1, 1, 2]), [4], ["x"]);
    expect(lowering(on(dup, new PartitionSpec()))).toThrow(/device id 1 appears twice/);
    expect(lowering(new ShapeDtypeStruct([1], "float32", new SingleDeviceSharding(-1)))).toThrow(
      EncodeError,
    );
    // biome-ignore lint/suspicious/noExplicitAny: a dtype name JAX does not have
    expect(lowering(new ShapeDtypeStruct([1], "float128" as any))).toThrow(
      /unknown dtype "float128"/,
    );
    expect(lowering(new ShapeDtypeStruct([1.5], "float32"))).toThrow(/not a size/);
  });

  test("a GSPMD tile assignment that does not fit its devices", () => {
    const devices = new DeviceList(range(4));
    const bad = new GSPMDSharding(devices, {
      type: "other",
      tileDims: [2, 2],
      tileDevices: [0, 1, 2, 7],
    });
    expect(lowering(new ShapeDtypeStruct([4], "float32", bad))).toThrow(
      /logical device 7 is not in a list of 4/,
    );
    const short = new GSPMDSharding(devices, {
      type: "other",
      tileDims: [2, 2],
      tileDevices: [0, 1],
    });
    expect(lowering(new ShapeDtypeStruct([4], "float32", short))).toThrow(
      /tile dims hold 4 devices/,
    );
  });

  test("a leaf that is not a ShapeDtypeStruct", () => {
    // biome-ignore lint/suspicious/noExplicitAny: deliberately the wrong type
    expect(() => specsBytes([smallMesh() as any])).toThrow(/must be a ShapeDtypeStruct/);
  });
});
