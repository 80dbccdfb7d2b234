import {
  DEFAULT_LIMITS,
  DecodeError,
  decodeSpecs,
  encodeSpecs,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";

/** What the limits admit; the corpus (corpus-cases.ts, limit-exceeded--*) has what they refuse. */
describe("decoding limits", () => {
  test("a tree beyond the default depth decodes once the limit is raised", () => {
    let tree: unknown = new ShapeDtypeStruct([1], "float32");
    for (let i = 0; i < DEFAULT_LIMITS.maxTreeDepth + 5; i++) tree = [tree];
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
    const bytes = encodeSpecs(treedef, leaves);
    expect(() => decodeSpecs(bytes)).toThrow(DecodeError);
    const decoded = decodeSpecs(bytes, { limits: { maxTreeDepth: 2000 } });
    expect(encodeSpecs(decoded.treedef, decoded.leaves)).toEqual(bytes);
  });

  test("the depth limit admits a tree exactly that deep", () => {
    const leaves = [new ShapeDtypeStruct([1], "float32")];
    const { treedef } = treeFlatten<ShapeDtypeStruct>([leaves]); // two lists around a leaf
    const bytes = encodeSpecs(treedef, leaves);
    expect(decodeSpecs(bytes, { limits: { maxTreeDepth: 2 } }).leaves).toEqual(leaves);
    expect(() => decodeSpecs(bytes, { limits: { maxTreeDepth: 1 } })).toThrow(
      expect.objectContaining({ code: "limit-exceeded", path: "specs.treedef.kinds[1]" }),
    );
  });
});
