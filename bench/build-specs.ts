import {
  DeviceList,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type PyTreeDef,
  type ShapeDtypeStruct,
  ShapeDtypeStruct as Spec,
  treeFlatten,
} from "../src/index";
import { type Case, deviceIds, leafKey } from "./scenarios";

/** The flattened specs of a case, as the TypeScript model (jax_bench.py builds the same in JAX). */
export function buildSpecs(c: Case): { treedef: PyTreeDef; leaves: ShapeDtypeStruct[] } {
  const mesh = new Mesh(new DeviceList(deviceIds(c)), c.meshShape, c.axisNames);
  const shardings = c.shardings.map(
    (entries) => new NamedSharding(mesh, new PartitionSpec(...entries)),
  );
  const leaves = Array.from(
    { length: c.leafCount },
    (_, i) => new Spec(c.leafShape, c.dtype, shardings[i % shardings.length]),
  );
  const tree =
    c.tree === "list"
      ? leaves
      : Object.fromEntries(leaves.map((leaf, i) => [leafKey(i, c.leafCount), leaf]));
  return treeFlatten<ShapeDtypeStruct>(tree);
}
