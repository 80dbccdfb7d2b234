import { decodeSpecs, encodeSpecs, ShapeDtypeStruct, Tuple, treeFlatten } from "../src";

/**
 * A PyTreeDef counts its nodes when first asked, so a decoded tree is not walked unless asked;
 * and the tree check reuses one scratch buffer between payloads.
 */

test("a decoded tree with repeated subtrees counts what the encoded one had", () => {
  const layer = () => ({ w: new ShapeDtypeStruct([2], "float32"), b: null, t: new Tuple([]) });
  const tree = { layers: [layer(), layer(), layer()], head: [layer()] };
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  const back = decodeSpecs(encodeSpecs(treedef, leaves));
  expect(back.treedef.numLeaves).toBe(4);
  expect(back.treedef.numNodes).toBe(treedef.numNodes);
  // dict, list, 3 layers (dict, leaf, None, tuple), list, 1 layer
  expect(treedef.numNodes).toBe(1 + 1 + 3 * 4 + 1 + 4);
  expect(back.leaves).toHaveLength(back.treedef.numLeaves);
});

test("checks that reuse one scratch buffer give the same trees, whatever was checked before", () => {
  const layer = () => ({ w: new ShapeDtypeStruct([2], "float32"), b: [null, null] });
  const small = treeFlatten<ShapeDtypeStruct>([layer(), layer()]);
  const large = treeFlatten<ShapeDtypeStruct>(Array.from({ length: 3000 }, layer));
  const smallBytes = encodeSpecs(small.treedef, small.leaves);
  const largeBytes = encodeSpecs(large.treedef, large.leaves);
  const first = decodeSpecs(smallBytes);
  expect(decodeSpecs(largeBytes).treedef.equals(large.treedef)).toBe(true);
  const again = decodeSpecs(smallBytes);
  expect(again.treedef.equals(small.treedef)).toBe(true);
  expect(again.treedef.equals(first.treedef)).toBe(true);
  expect(again.leaves).toHaveLength(2);
});
