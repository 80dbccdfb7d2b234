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
import { type Case, deviceIds, leafKey, type SpecEntry } from "./scenarios";

/**
 * The flattened specs of a case, as the TypeScript model (jax_bench.py builds the same in JAX),
 * every object new; `ids` saves writing out a shuffle again.
 */
export function buildSpecs(
  c: Case,
  ids: readonly number[] = deviceIds(c),
): { treedef: PyTreeDef; leaves: ShapeDtypeStruct[] } {
  const mesh = new Mesh(new DeviceList(ids), c.meshShape, c.axisNames);
  const sharding = (entries: SpecEntry[]) => new NamedSharding(mesh, new PartitionSpec(...entries));
  const shared = c.shardings.map(sharding);
  const leaves = Array.from({ length: c.leafCount }, (_, i) => {
    const k = i % c.shardings.length;
    return new Spec(c.leafShape, c.dtype, c.freshShardings ? sharding(c.shardings[k]) : shared[k]);
  });
  const tree =
    c.tree === "list"
      ? leaves
      : Object.fromEntries(leaves.map((leaf, i) => [leafKey(i, c.leafCount), leaf]));
  return treeFlatten<ShapeDtypeStruct>(tree);
}
