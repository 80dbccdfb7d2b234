import {
  decodeSpecs,
  encodeSpecs,
  ShapeDtypeStruct,
  type TreeNode,
  Tuple,
  treeFlatten,
} from "../src";
import { treeContents } from "../src/entries/tree-repeats";

/**
 * The 1.1 writer keeps the contents it found for a tree, by its root and leaf refs, held
 * weakly: the same tree and refs give the same contents (and bytes equal to a fresh tree's),
 * other refs are found afresh, and a dropped tree is not kept alive.
 */

const layer = (dtype: "float32" | "bfloat16") => ({
  w: new ShapeDtypeStruct([4, 4], dtype),
  b: new ShapeDtypeStruct([4], dtype),
  extra: [null, new Tuple([])],
});
const model = () => ({ layers: [layer("float32"), layer("float32"), layer("bfloat16")] });

test("the same root and refs give the same contents; other refs are found afresh", () => {
  const { treedef } = treeFlatten(model());
  const refs = [0, 1, 0, 1, 2, 3];
  const first = treeContents(treedef.root, refs);
  expect(treeContents(treedef.root, [...refs])).toBe(first);
  const other = treeContents(treedef.root, [0, 1, 2, 3, 4, 5]);
  expect(other).not.toBe(first);
  // The first two layers are equal under the first refs, and differ under the others.
  const layerIds = (c: typeof first) =>
    c.nodes.flatMap((node, p) =>
      node.kind === "dict" && node.keys.includes("w") ? [c.ids[p]] : [],
    );
  expect(new Set(layerIds(first)).size).toBe(2);
  expect(new Set(layerIds(other)).size).toBe(3);
  expect(treeContents(treedef.root)).not.toBe(first);
  expect(treeContents(treedef.root)).toBe(treeContents(treedef.root));
});

test("encoding a tree again gives the bytes of a fresh, equal tree", () => {
  const a = treeFlatten<ShapeDtypeStruct>(model());
  const once = encodeSpecs(a.treedef, a.leaves);
  const again = encodeSpecs(a.treedef, a.leaves);
  const b = treeFlatten<ShapeDtypeStruct>(model());
  expect(again).toEqual(once);
  expect(encodeSpecs(b.treedef, b.leaves)).toEqual(once);
  // Leaves that now differ by value write other refs: the cached contents are not reused.
  const changed = [...a.leaves];
  changed[2] = new ShapeDtypeStruct([4, 4], "bfloat16");
  const back = decodeSpecs(encodeSpecs(a.treedef, changed));
  expect(back.leaves.map((l) => l.dtype)).toEqual(changed.map((l) => l.dtype));
});

test("the cache keeps no tree alive", async () => {
  const gc = (() => {
    require("node:v8").setFlagsFromString("--expose-gc");
    return require("node:vm").runInNewContext("gc") as () => void;
  })();
  const dropped = (() => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(model());
    encodeSpecs(treedef, leaves);
    treeContents(treedef.root);
    return new WeakRef<TreeNode>(treedef.root);
  })();
  // WeakRefs made during a job keep their targets until the job ends.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  gc();
  expect(dropped.deref()).toBeUndefined();
});
