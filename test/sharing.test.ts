import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import { range, specsBytes } from "./fixtures";

/** Builds the same content from scratch, so no object is shared with another call. */
function freshLeaves(): ShapeDtypeStruct[] {
  const mesh = () => new Mesh(new DeviceList(range(64)), [8, 8], ["data", "model"]);
  return Array.from({ length: 10 }, (_, i) => {
    const spec = i % 2 ? new PartitionSpec("data") : new PartitionSpec(null, "model");
    return new ShapeDtypeStruct([128, 64], "float32", new NamedSharding(mesh(), spec));
  });
}

describe("dedup by value", () => {
  test("equal but distinct meshes, shardings and leaves become one entry each", () => {
    const table = SpecsPayload.decode(specsBytes(freshLeaves())).table!.entries;
    expect(table.map((e) => e.kind?.$case)).toEqual([
      "deviceList",
      "mesh",
      "namedSharding",
      "arraySpec",
      "namedSharding",
      "arraySpec",
    ]);
  });

  test("identical leaves cost one small integer each", () => {
    const leaf = freshLeaves()[0];
    const one = specsBytes([leaf]).length;
    const thousand = specsBytes(Array(1000).fill(leaf)).length;
    expect(thousand - one).toBeLessThan(2 * 1000 + 10);
  });
});

describe("lifting restores sharing", () => {
  test("leaves on one sharding share it, shardings on one mesh share it", () => {
    const { leaves } = decodeSpecs(specsBytes(freshLeaves()));
    const shardings = leaves.map((l) => l.sharding as NamedSharding);
    expect(shardings[1]).toBe(shardings[3]);
    expect(shardings[0]).toBe(shardings[2]);
    expect(shardings[0]).not.toBe(shardings[1]);
    expect(shardings[0].mesh).toBe(shardings[1].mesh);
    expect(shardings[0].mesh.devices).toBe(shardings[1].mesh.devices);
    expect(leaves[0]).toBe(leaves[2]);
  });
});

describe("canonical bytes", () => {
  test("equal content gives identical bytes whatever the object identities", () => {
    const shared = freshLeaves();
    const sharedOnce = shared.map((l) => l.sharding);
    const reused = shared.map((l, i) => new ShapeDtypeStruct(l.shape, l.dtype, sharedOnce[i % 2]));
    expect(specsBytes(reused)).toEqual(specsBytes(freshLeaves()));
  });

  test("decode then encode gives the same bytes", () => {
    const bytes = specsBytes(freshLeaves());
    const { treedef, leaves } = decodeSpecs(bytes);
    expect(encodeSpecs(treedef, leaves)).toEqual(bytes);
  });

  test("table order is the post-order of the first encounter", () => {
    const a = new Mesh(new DeviceList([0, 1]), [2], ["a"]);
    const b = new Mesh(new DeviceList([2, 3]), [2], ["b"]);
    const leaves = [
      new ShapeDtypeStruct([2], "int32", new NamedSharding(b, new PartitionSpec("b"))),
      new ShapeDtypeStruct([2], "int32", new NamedSharding(a, new PartitionSpec("a"))),
      new ShapeDtypeStruct([2], "int32", new NamedSharding(b, new PartitionSpec("b"))),
    ];
    const { treedef } = treeFlatten(leaves);
    const table = SpecsPayload.decode(encodeSpecs(treedef, leaves)).table!.entries;
    const meshes = table.flatMap((e) =>
      e.kind?.$case === "mesh" ? [e.kind.value.axisNames[0]] : [],
    );
    expect(meshes).toEqual(["b", "a"]);
    expect(table).toHaveLength(8);
  });
});
