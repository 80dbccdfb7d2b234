import type { PartitionSpecEntry } from "../model/partition-spec";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "../model/sharding";
import type { TreeNode } from "../model/tree";
import { type DictKey, dictKeyText } from "../model/tree-dict-keys";

/** A dict key in a leaf path: a string quoted as before, [0], [True] and [None] as JAX writes them. */
const keyText = (key: DictKey) =>
  typeof key === "string" ? JSON.stringify(key) : dictKeyText(key);

/** Each leaf's path in the tree, as JAX's keystr writes it: ['key'], [0], .field. */
export function leafPaths(root: TreeNode): string[] {
  const paths: string[] = [];
  const visit = (node: TreeNode, path: string) => {
    if (node.kind === "leaf") paths.push(path || "(root)");
    if (!("children" in node)) return;
    node.children.forEach((child, i) => {
      if ("keys" in node) visit(child, `${path}[${keyText(node.keys[i])}]`);
      else if (node.kind === "namedtuple") visit(child, `${path}.${node.fields[i]}`);
      else visit(child, `${path}[${i}]`);
    });
  };
  visit(root, "");
  return paths;
}

/** A leaf in one line (a key array as key<fry>): float32[8,4] NamedSharding(mesh x=2 y=4 of 8 devices, P(x, y)). */
export function describeLeaf(leaf: ShapeDtypeStruct): string {
  const weak = leaf.weakType ? " weak" : "";
  return `${leaf.dtypeString}[${leaf.shape.join(",")}]${weak} ${describeSharding(leaf.sharding)}`;
}

function describeSharding(sharding: Sharding | null): string {
  if (sharding === null) return "no sharding";
  const memory = "memoryKind" in sharding && sharding.memoryKind ? `, ${sharding.memoryKind}` : "";
  if (sharding instanceof NamedSharding) {
    const { mesh, spec } = sharding;
    const axes = mesh.axisNames.map((name, i) => `${name}=${mesh.axisSizes[i]}`).join(" ");
    const entries = spec.entries.map(describeEntry).join(", ");
    return `NamedSharding(mesh ${axes} of ${mesh.devices.size} devices, P(${entries})${memory})`;
  }
  if (sharding instanceof SingleDeviceSharding) {
    return `SingleDeviceSharding(device ${sharding.device.id}${memory})`;
  }
  if (sharding instanceof GSPMDSharding) {
    return `GSPMDSharding(${sharding.devices.size} devices${memory})`;
  }
  return "a sharding of a newer minor version";
}

function describeEntry(entry: PartitionSpecEntry): string {
  if (entry === null) return "None";
  if (typeof entry === "string") return entry;
  return Array.isArray(entry) ? `(${entry.join(", ")})` : String(entry);
}
