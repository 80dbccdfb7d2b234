import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  DecodeError,
  type DictKey,
  decodeSpecs,
  EncodeError,
  encodeSpecs,
  Pickled,
  PyTreeDef,
  ShapeDtypeStruct,
  type TreeNode,
} from "../src";
import { LEAF } from "../src/model/tree";
import { compareDictKeys, dictKeyText, sortDictKeys } from "../src/model/tree-dict-keys";

const leaf = new ShapeDtypeStruct([1], "float32");
const bytes = (...b: number[]) => new Uint8Array(b);
/** A dict node of leaves with these keys, as a PyTreeDef (keys given as Python holds them). */
const dictOf = (keys: DictKey[], kind: "dict" | "ordered_dict" = "dict") =>
  new PyTreeDef({ kind, keys, children: keys.map(() => LEAF) });
const roundTrip = (treedef: PyTreeDef) => {
  const data = encodeSpecs(treedef, Array(treedef.numLeaves).fill(leaf));
  const back = decodeSpecs(data);
  // TypeScript writes again exactly what it read.
  expect(encodeSpecs(back.treedef, back.leaves)).toEqual(data);
  return back.treedef.root as Extract<TreeNode, { keys: readonly DictKey[] }>;
};

describe("colocated.v1.1 dict keys", () => {
  test("float, bytes and tuple keys round-trip with their types, -0.0 kept", () => {
    const keys: DictKey[] = [-2.5, -0, 1n, 1.5, 2, Number.POSITIVE_INFINITY];
    expect(roundTrip(dictOf(keys)).keys.map((k) => [typeof k, Object.is(k, -0)])).toEqual(
      keys.map((k) => [typeof k, Object.is(k, -0)]),
    );
    const byteKeys = [bytes(), bytes(0x61, 0), bytes(0xff)];
    expect(roundTrip(dictOf(byteKeys)).keys).toEqual(byteKeys);
    const tuples: DictKey[] = [[], [1n, "a"], [1n, "b"], [2.5]];
    expect(roundTrip(dictOf(tuples)).keys).toEqual(tuples);
    const nested: DictKey[] = [
      [[0n], bytes(0x7a)],
      [[1n, [null, true]], "q"],
    ];
    expect(roundTrip(dictOf(nested)).keys).toEqual(nested);
  });

  test("a tuple's items join the pool before it, so nothing refers forward", () => {
    const treedef = dictOf([[[2n], "x"]]);
    const message = SpecsPayload.decode(encodeSpecs(treedef, [leaf])).specs?.treedef;
    // "x" is a str (pool 0); 2 (pool 1); (2,) (pool 2); ((2,), "x") (pool 3).
    expect(message?.keys.map((k) => k.key?.$case)).toEqual(["int", "tuple", "tuple"]);
    const last = message?.keys[2].key;
    expect(last?.$case === "tuple" && last.value.items).toEqual([2, 0]);
    expect(message?.dictKeys).toEqual([3]);
    expect(message?.freshDictKeys).toBe(false);
  });

  test("pickled keys and a pickled default_factory are kept and written unchanged", () => {
    const pickle = new Pickled(bytes(0x80, 4, 0x4e, 0x2e));
    const treedef = new PyTreeDef({
      kind: "default_dict",
      defaultFactory: new Pickled(bytes(0x80, 4, 0x88, 0x2e)),
      keys: [pickle, 3n],
      children: [LEAF, LEAF],
    });
    const root = roundTrip(treedef) as Extract<TreeNode, { kind: "default_dict" }>;
    expect(root.keys[0]).toBeInstanceOf(Pickled);
    expect(root.defaultFactory).toBeInstanceOf(Pickled);
    expect((root.defaultFactory as Pickled).bytes).toEqual(bytes(0x80, 4, 0x88, 0x2e));
  });

  test("a custom node's pickled class is kept, and two classes of one name stay apart", () => {
    const local = (pickle: number) => ({
      kind: "custom" as const,
      typeName: "m.f.<locals>.Local",
      nodeData: bytes(),
      typePickle: new Pickled(bytes(0x80, pickle)),
      children: [{ kind: "list" as const, children: [LEAF, LEAF] }],
    });
    const treedef = new PyTreeDef({ kind: "tuple", children: [local(1), local(2), local(1)] });
    const data = encodeSpecs(treedef, Array(6).fill(leaf));
    const back = decodeSpecs(data);
    expect(encodeSpecs(back.treedef, back.leaves)).toEqual(data);
    const nodes = (back.treedef.root as Extract<TreeNode, { kind: "tuple" }>).children;
    const pickles = nodes.map((n) => (n.kind === "custom" ? n.typePickle?.bytes[1] : undefined));
    expect(pickles).toEqual([1, 2, 1]);
    const message = SpecsPayload.decode(data).specs?.treedef;
    expect(message?.nodeTypes.length).toBe(2);
  });

  test("keys are ordered by Python's <, and what Python cannot compare is refused", () => {
    expect(compareDictKeys(1n, 1.5)).toBeLessThan(0);
    expect(compareDictKeys(true, 0.5)).toBeGreaterThan(0);
    expect(compareDictKeys(2n ** 53n + 1n, 2 ** 53)).toBeGreaterThan(0); // exact, as Python
    expect(compareDictKeys([1n, "a"], [1, "b"])).toBeLessThan(0); // 1 == 1.0: "a" < "b" decides
    expect(compareDictKeys([1n], ["a"])).toBeUndefined();
    expect(compareDictKeys([], [null])).toBeLessThan(0);
    expect(compareDictKeys(new Pickled(bytes(1)), 1n)).toBe("pickled");
    expect(sortDictKeys([[2n], [1n, 2n], [1n]])).toEqual([[1n], [1n, 2n], [2n]]);
    expect(() => encodeSpecs(dictOf([-0, 0]), [leaf, leaf])).toThrow(/distinct/);
    expect(() => encodeSpecs(dictOf([[1n], ["a"]]), [leaf, leaf])).toThrow(/sorted together/);
    expect(() => encodeSpecs(dictOf([Number.NaN]), [leaf])).toThrow(EncodeError);
  });

  test("keys print as Python prints them", () => {
    const texts = [1.0, -0, 1e16, 1e-5, 0.0001, 2.5e-7, Number.NEGATIVE_INFINITY].map((k) =>
      dictKeyText(k),
    );
    expect(texts).toEqual(["1.0", "-0.0", "1e+16", "1e-05", "0.0001", "2.5e-07", "-inf"]);
    expect(dictKeyText([1n])).toBe("(1,)");
    expect(dictKeyText([bytes(0x27, 0x5c, 0), null, true])).toBe(`(b"'\\\\\\x00", None, True)`);
  });

  test("a 1.0 target refuses them at their node, naming 1.1", () => {
    const tree = new PyTreeDef({ kind: "list", children: [LEAF, dictOf([1.5]).root] });
    const write = () => encodeSpecs(tree, [leaf, leaf], { targetMinorVersion: 0 });
    expect(write).toThrow(EncodeError);
    expect(write).toThrow(/treedef\.kinds\[2\].*needs colocated\.v1\.1/);
  });

  test("a float key under a 1.0 header is refused where the dict uses it", () => {
    const data = SpecsPayload.decode(encodeSpecs(dictOf([1.5]), [leaf]));
    data.header = { ...data.header!, minorVersion: 0 };
    expect(() => decodeSpecs(SpecsPayload.encode(data).finish())).toThrow(DecodeError);
  });
});
