import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  CustomNode,
  decodeSpecs,
  encodeSpecs,
  NamedTuple,
  ShapeDtypeStruct,
  Tuple,
  treeFlatten,
  treeUnflatten,
  tuple,
} from "../src";

const leaf = (n: number) => new ShapeDtypeStruct([n], "float32");

describe("treeFlatten and treeUnflatten", () => {
  test("dicts, lists, tuples, None, namedtuples and custom nodes", () => {
    const point = new NamedTuple("geometry.Point", ["x", "y"], [leaf(1), null]);
    const custom = new CustomNode("model.Params", new Uint8Array([1, 2, 3]), [leaf(2), [leaf(3)]]);
    const tree = { b: [leaf(4), tuple(leaf(5), null)], a: point, c: custom, d: tuple() };
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    expect(leaves.map((l) => l.shape[0])).toEqual([1, 4, 5, 2, 3]);
    expect(treedef.numLeaves).toBe(5);
    const rebuilt = treeUnflatten(treedef, leaves) as Record<string, unknown>;
    expect(Object.keys(rebuilt)).toEqual(["a", "b", "c", "d"]);
    expect(rebuilt.d).toBeInstanceOf(Tuple);
    expect(treeFlatten(rebuilt).treedef.equals(treedef)).toBe(true);
  });

  test("dict keys sort by code point, as Python sorts them", () => {
    const tree = { "\u{1F600}": null, "\uFFFF": null, b: null, B: null };
    const { treedef } = treeFlatten(tree);
    expect(treedef.root.kind === "dict" && treedef.root.keys).toEqual([
      "B",
      "b",
      "\uFFFF",
      "\u{1F600}",
    ]);
  });
});

describe("treedef on the wire", () => {
  test("every node kind round-trips", () => {
    const tree = {
      params: [tuple(leaf(1), leaf(2)), null, { w: leaf(3) }],
      point: new NamedTuple("geometry.Point", ["x", "y"], [leaf(4), leaf(5)]),
      other: new NamedTuple("geometry.Point", ["x", "y"], [leaf(6), []]),
      custom: new CustomNode("model.Params", new Uint8Array([9, 8]), [leaf(7)]),
      empty: {},
    };
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    const back = decodeSpecs(encodeSpecs(treedef, leaves));
    expect(back.treedef.equals(treedef)).toBe(true);
    expect(back.leaves.map((l) => l.shape[0])).toEqual([7, 6, 1, 2, 3, 4, 5]);
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves)).specs!.treedef!;
    expect(message.nodeTypes).toEqual([
      { name: "model.Params", fields: [], _unknownFields: {} },
      { name: "geometry.Point", fields: ["x", "y"], _unknownFields: {} },
    ]);
  });

  test("a flat list of 1,000 leaves costs about a byte per node", () => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(Array(1000).fill(leaf(1)));
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves)).specs!;
    const treeBytes = SpecsPayload.encode({
      specs: { treedef: message.treedef, leaves: [] },
    }).finish().length;
    expect(treeBytes).toBeLessThan(1020);
  });

  test("repeated dict keys are written once", () => {
    const layers = Array.from({ length: 100 }, () => ({ kernel: leaf(1), bias: leaf(1) }));
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(layers);
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves)).specs!.treedef!;
    expect(message.strings).toEqual(["bias", "kernel"]);
    expect(message.dictKeys).toHaveLength(200);
  });

  test("a tree nested 900 deep round-trips without recursion limits", () => {
    let tree: unknown = leaf(1);
    for (let i = 0; i < 900; i++) tree = [tree];
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    expect(decodeSpecs(encodeSpecs(treedef, leaves)).treedef.equals(treedef)).toBe(true);
  });
});
