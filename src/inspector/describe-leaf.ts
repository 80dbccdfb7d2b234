import { DeviceList } from "../model/device-list";
import { Mesh } from "../model/mesh";
import type { PartitionSpecEntry } from "../model/partition-spec";
import { FunctionRef } from "../model/program";
import { dtypeString, ShapeDtypeStruct } from "../model/shape-dtype-struct";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "../model/sharding";
import type { TreeNode } from "../model/tree";
import { type DictKey, dictKeyText } from "../model/tree-dict-keys";
import { UnknownEntry } from "../model/unknown-entry";
import { DTypeValue, PickledValue, PRNGImpl, type ValueLeaf } from "../model/value-leaf";

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

/** Device ids listed in a description at most. */
const IDS_SHOWN = 8;

/**
 * A value payload's leaf by kind, in one line: its kind as the wire names it (a table
 * object's entry kind, or the leaf's case: dtype, prngImpl, function, pickled) and what it is.
 */
export function describeValueLeaf(leaf: ValueLeaf): { kind: string; text: string } {
  if (leaf instanceof ShapeDtypeStruct) return { kind: "arraySpec", text: describeLeaf(leaf) };
  if (leaf instanceof DTypeValue)
    return { kind: "dtype", text: `dtype ${dtypeString(leaf.dtype, leaf.keyType)}` };
  if (leaf instanceof PRNGImpl)
    return { kind: "prngImpl", text: `PRNG impl ${leaf.name} (key shape [${leaf.keyShape}])` };
  if (leaf instanceof FunctionRef)
    return { kind: "function", text: `function ${leaf.module}.${leaf.qualname}` };
  if (leaf instanceof PickledValue) {
    const refs = leaf.refs.length;
    const text = `a pickle of ${leaf.pickle.length} bytes holding ${refs} table ${refs === 1 ? "object" : "objects"}`;
    return { kind: "pickled", text };
  }
  if (leaf instanceof DeviceList) return { kind: "deviceList", text: describeDevices(leaf) };
  if (leaf instanceof Mesh) return { kind: "mesh", text: describeMesh(leaf) };
  if (leaf instanceof NamedSharding) return { kind: "namedSharding", text: describeSharding(leaf) };
  if (leaf instanceof SingleDeviceSharding)
    return { kind: "singleDeviceSharding", text: describeSharding(leaf) };
  if (leaf instanceof GSPMDSharding) return { kind: "gspmdSharding", text: describeSharding(leaf) };
  if (leaf instanceof UnknownEntry)
    return { kind: "unknown", text: "a table object of a newer minor version" };
  return { kind: "unknown", text: "a leaf of a newer minor version" };
}

function describeDevices(list: DeviceList): string {
  const ids = list.ids.slice(0, IDS_SHOWN).join(", ");
  const more = list.size > IDS_SHOWN ? ", ..." : "";
  return `DeviceList(${list.size} ${list.size === 1 ? "device" : "devices"}: ${ids}${more})`;
}

function describeMesh(mesh: Mesh): string {
  const axes = mesh.axisNames.map((name, i) => `${name}=${mesh.axisSizes[i]}`).join(" ");
  return `Mesh(${axes} of ${mesh.devices.size} devices)`;
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
