import {
  CustomNode,
  DeviceList,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec,
  type PyTreeDef,
  type ShapeDtypeStruct,
  ShapeDtypeStruct as Spec,
  Tuple,
  treeFlatten,
} from "../../src/index";
import { type Case, deviceIds, leafKey, type SpecEntry } from "./scenarios";
import type { Blueprint, TreeShape } from "./training-trees";

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
  if (c.tree === "nested") {
    return treeFlatten<ShapeDtypeStruct>(
      buildBlueprint(c.blueprint, (k) => sharding(c.shardings[k])),
    );
  }
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

/**
 * A blueprint's pytree, a leaf's sharding from `sharding` (called once per leaf). A custom
 * node's aux data is written as colocated_wire writes a register_dataclass class's tuple of
 * meta-field values: "j" and its compact JSON.
 */
function buildBlueprint(blueprint: Blueprint, sharding: (k: number) => NamedSharding): unknown {
  const build = (node: TreeShape): unknown => {
    if (node === null) return null;
    if ("leaf" in node) {
      const kind = blueprint.leafKinds[node.leaf];
      return new Spec(kind.shape, kind.dtype, sharding(kind.sharding));
    }
    if ("list" in node) return node.list.map(build);
    if ("tuple" in node) return new Tuple(node.tuple.map(build));
    if ("dict" in node) {
      return Object.fromEntries(Object.entries(node.dict).map(([k, v]) => [k, build(v)]));
    }
    if ("namedtuple" in node) {
      const { namedtuple, fields } = node;
      return new NamedTuple(namedtuple, Object.keys(fields), Object.values(fields).map(build));
    }
    const aux = new TextEncoder().encode(`j${JSON.stringify(Object.values(node.meta))}`);
    return new CustomNode(node.custom, aux, Object.values(node.data).map(build));
  };
  return build(blueprint.root);
}
