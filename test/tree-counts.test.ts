import { decodeSpecs, encodeSpecs, ShapeDtypeStruct, Tuple, treeFlatten } from "../src";

/** A PyTreeDef counts its nodes when first asked, so a decoded tree is not walked unless asked. */

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
