import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import {
  CustomNode,
  decodeSpecs,
  EncodeError,
  encodeSpecs,
  NamedTuple,
  ShapeDtypeStruct,
  Tuple,
  treeFlatten,
  treeUnflatten,
  tuple,
} from "../src";
import { DefaultDict, OrderedDict } from "../src/model/tree-values";

const leaf = (n: number) => new ShapeDtypeStruct([n], "float32");
const KINDS = {
  LIST: NodeKind.NODE_KIND_LIST,
  DICT: NodeKind.NODE_KIND_DICT,
  LEAVES: NodeKind.NODE_KIND_LEAVES,
  REPEAT: NodeKind.NODE_KIND_REPEAT,
};

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
      { name: "model.Params", fields: [], pickle: new Uint8Array(0), _unknownFields: {} },
      { name: "geometry.Point", fields: ["x", "y"], pickle: new Uint8Array(0), _unknownFields: {} },
    ]);
  });

  test("a flat list of 1,000 leaves costs about a byte per node", () => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(Array(1000).fill(leaf(1)));
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves)).specs!;
    const treeBytes = SpecsPayload.encode({
      specs: { treedef: message.treedef, leaves: [], leafCopies: [] },
    }).finish().length;
    expect(treeBytes).toBeLessThan(1020);
  });

  test("repeated dict keys are written once", () => {
    const layers = Array.from({ length: 100 }, () => ({ kernel: leaf(1), bias: leaf(1) }));
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(layers);
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves, { targetMinorVersion: 0 }))
      .specs!.treedef!;
    expect(message.strings).toEqual(["bias", "kernel"]);
    expect(message.dictKeys).toHaveLength(200);
  });

  test("from 1.1, a repeated layer is written once and its keys are front-coded", () => {
    const layers = Array.from({ length: 100 }, () => ({ kernel: leaf(1), bias: leaf(1) }));
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(layers);
    const specs = SpecsPayload.decode(encodeSpecs(treedef, leaves)).specs!;
    const { LIST, DICT, LEAVES, REPEAT } = KINDS;
    expect(specs.treedef!.kinds).toEqual([LIST, DICT, LEAVES, ...Array(99).fill(REPEAT)]);
    expect(specs.treedef!.arities).toEqual([100, 2, 2, ...Array(99).fill(1)]);
    expect(specs.treedef!.strings).toEqual([]);
    expect(new TextDecoder().decode(specs.treedef!.keyText)).toBe("biaskernel");
    expect(specs.treedef!.keySizes).toEqual([0, 4, 0, 6]);
    expect(specs.treedef!.freshDictKeys).toBe(true);
    expect(specs.treedef!.dictKeys).toEqual([]);
    expect(specs.leaves).toHaveLength(2);
  });

  test("a tree nested 900 deep round-trips without recursion limits", () => {
    let tree: unknown = leaf(1);
    for (let i = 0; i < 900; i++) tree = [tree];
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    expect(decodeSpecs(encodeSpecs(treedef, leaves)).treedef.equals(treedef)).toBe(true);
  });
});

describe("colocated.v1.1 dict nodes", () => {
  const roundTrip = (tree: unknown) => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    const bytes = encodeSpecs(treedef, leaves);
    const back = decodeSpecs(bytes);
    expect(back.treedef.equals(treedef)).toBe(true);
    expect(encodeSpecs(back.treedef, back.leaves)).toEqual(bytes);
    return back;
  };

  test("a Map with int, bool and None keys is a dict sorted as Python sorts it", () => {
    const tree = new Map<unknown, unknown>([
      [2, leaf(1)],
      [-1n, leaf(2)],
      [true, leaf(3)],
    ]);
    const { treedef } = treeFlatten(tree);
    expect(treedef.root.kind === "dict" && treedef.root.keys).toEqual([-1n, true, 2n]);
    const back = roundTrip(tree);
    const rebuilt = treeUnflatten(back.treedef, back.leaves) as Map<unknown, ShapeDtypeStruct>;
    expect([...rebuilt.keys()]).toEqual([-1n, true, 2n]);
    expect(rebuilt.get(2n)?.shape).toEqual([1]);
    roundTrip(new Map([[null, leaf(1)]]));
    // A dict whose keys are all strings comes back a plain object, whatever it was built from.
    expect(treeUnflatten(treeFlatten(new Map([["a", 1]])).treedef, [1])).toEqual({ a: 1 });
  });

  test("keys Python cannot sort together, or equal in Python, are refused", () => {
    expect(() =>
      treeFlatten(
        new Map<unknown, unknown>([
          ["a", 1],
          [1, 2],
        ]),
      ),
    ).toThrow(/cannot be sorted together/);
    expect(() =>
      treeFlatten(
        new Map<unknown, unknown>([
          [1, 1],
          [true, 2],
        ]),
      ),
    ).toThrow(/distinct/);
    expect(() => treeFlatten(new Map([[2 ** 60, 1]]))).toThrow(EncodeError);
    expect(
      () =>
        treeFlatten(
          new OrderedDict([
            [1n, 1],
            [true, 2],
          ]),
        ).treedef,
    ).not.toThrow();
    const { treedef, leaves } = treeFlatten(
      new OrderedDict([
        [1n, leaf(1)],
        [true, leaf(2)],
      ]),
    );
    expect(() => encodeSpecs(treedef, leaves as ShapeDtypeStruct[])).toThrow(/repeats/);
  });

  test("OrderedDict keeps its order and DefaultDict its factory", () => {
    const tree = [
      new OrderedDict([
        ["b", leaf(1)],
        [0n, leaf(2)],
        [null, new OrderedDict([])],
      ]),
      new DefaultDict("builtins.list", [
        ["y", leaf(3)],
        ["x", new DefaultDict(null, [])],
      ]),
    ];
    const back = roundTrip(tree);
    const [ordered, defaults] = treeUnflatten(back.treedef, back.leaves) as [
      OrderedDict,
      DefaultDict,
    ];
    expect(ordered.entries.map(([k]) => k)).toEqual(["b", 0n, null]);
    expect(defaults.defaultFactory).toBe("builtins.list");
    expect(defaults.entries.map(([k]) => k)).toEqual(["x", "y"]);
    expect((defaults.entries[0][1] as DefaultDict).defaultFactory).toBeNull();
  });

  test("a 1.0 target refuses them naming 1.1, but writes OrderedDicts as 1.0 did", () => {
    const at0 = (tree: unknown) => {
      const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
      return encodeSpecs(treedef, leaves, { targetMinorVersion: 0 });
    };
    expect(() => at0([leaf(1), new Map([[1, leaf(2)]])])).toThrow(
      "specs.treedef.kinds[2]: dict key 1 needs colocated.v1.1; the target is 1.0",
    );
    expect(() => at0(new DefaultDict("builtins.list", []))).toThrow(
      /^specs\.treedef\.kinds\[0\]: .*needs colocated\.v1\.1/,
    );
    const message = SpecsPayload.decode(
      at0(
        new OrderedDict([
          ["a", leaf(1)],
          [2n, leaf(2)],
        ]),
      ),
    );
    const td = message.specs!.treedef!;
    expect(td.nodeTypes.map((t) => t.name)).toEqual(["collections.OrderedDict"]);
    expect(new TextDecoder().decode(td.nodeData[0])).toBe('j["a",2]');
  });
});
