import { deviceIdsOf } from "../model/device-list";
import type { PartitionSpecEntry } from "../model/partition-spec";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "../model/sharding";
import { devicesIndicesMap, type ShardIndex } from "../shard-indices";

/** A distinct sharding as the inspector draws it: its mesh, and the shard each device holds. */
export interface ShardingView {
  /** Its number in the page, in order of first use by a leaf. */
  id: number;
  label: string;
  /** How many leaves use it. */
  leaves: number;
  /** The first leaf using it, whose shape the shards are of. */
  example: { path: string; shape: number[] };
  /** The grid: a NamedSharding's mesh, or one axis "devices" for the others. */
  mesh: { axisNames: string[]; axisSizes: number[] };
  /** Device ids in grid order (row-major). */
  devices: number[];
  /** For each device in grid order, its shard's position in `shards`; empty when there is a problem. */
  shardOf: number[];
  /** The distinct shards of the example leaf, in order of first appearance. */
  shards: ShardIndex[];
  /** Why no shard could be computed (an indivisible shape, a sharding of a newer schema), or null. */
  problem: string | null;
}

/** The sharding's grid and the example leaf's shards over it. */
export function shardingView(
  id: number,
  sharding: Sharding,
  leaves: number,
  example: { path: string; shape: number[] },
): ShardingView {
  const view: ShardingView = {
    id,
    label: shardingLabel(sharding),
    leaves,
    example,
    mesh: gridOf(sharding),
    devices: devicesOf(sharding),
    shardOf: [],
    shards: [],
    problem: null,
  };
  try {
    // The map hands replicas one index object, so most look-ups are by identity; ranges decide.
    const byObject = new Map<ShardIndex, number>();
    const byRanges = new Map<string, number>();
    for (const { index } of devicesIndicesMap(sharding, example.shape)) {
      let k = byObject.get(index);
      if (k === undefined) {
        const key = `${index.start}|${index.stop}`;
        k = byRanges.get(key);
        if (k === undefined) {
          k = view.shards.length;
          byRanges.set(key, k);
          view.shards.push({ start: [...index.start], stop: [...index.stop] });
        }
        byObject.set(index, k);
      }
      view.shardOf.push(k);
    }
  } catch (error) {
    view.shardOf = [];
    view.shards = [];
    view.problem = (error as Error).message;
  }
  return view;
}

/**
 * A shape to draw a sharding with when no array is there (a value's sharding leaf): one
 * element per shard along each dimension a NamedSharding's spec names, a scalar otherwise.
 */
export function exampleShape(sharding: Sharding): number[] {
  if (!(sharding instanceof NamedSharding)) return [];
  const { axisNames, axisSizes } = sharding.mesh;
  const size = (axis: string) => axisSizes[axisNames.indexOf(axis)] ?? 1;
  return sharding.spec.entries.map((entry) => {
    if (typeof entry === "string") return size(entry);
    return Array.isArray(entry) ? entry.reduce((n: number, axis: string) => n * size(axis), 1) : 1;
  });
}

/** A sharding in one line: NamedSharding P('data', None) on data=16 model=8. */
export function shardingLabel(sharding: Sharding): string {
  const memory = "memoryKind" in sharding && sharding.memoryKind ? `, ${sharding.memoryKind}` : "";
  if (sharding instanceof NamedSharding) {
    const entries = sharding.spec.entries.map(entryText).join(", ");
    const axes = sharding.mesh.axisNames
      .map((name, i) => `${name}=${sharding.mesh.axisSizes[i]}`)
      .join(" ");
    return `NamedSharding P(${entries})${memory} on ${axes}`;
  }
  if (sharding instanceof SingleDeviceSharding) {
    return `SingleDeviceSharding device ${sharding.device.id}${memory}`;
  }
  if (sharding instanceof GSPMDSharding) {
    const h = sharding.hloSharding;
    const tiles = h.tileDims.length ? ` tiles [${h.tileDims}]` : "";
    return `GSPMDSharding ${h.type}${tiles} on ${sharding.devices.size} devices${memory}`;
  }
  return "a sharding of a newer schema";
}

function entryText(entry: PartitionSpecEntry): string {
  if (entry === null) return "None";
  if (typeof entry === "string") return `'${entry}'`;
  return Array.isArray(entry) ? `(${entry.map((a) => `'${a}'`).join(", ")})` : String(entry);
}

function gridOf(sharding: Sharding): ShardingView["mesh"] {
  if (sharding instanceof NamedSharding) {
    return { axisNames: [...sharding.mesh.axisNames], axisSizes: [...sharding.mesh.axisSizes] };
  }
  return { axisNames: ["devices"], axisSizes: [devicesOf(sharding).length] };
}

function devicesOf(sharding: Sharding): number[] {
  if (sharding instanceof NamedSharding) return [...deviceIdsOf(sharding.mesh.devices)];
  if (sharding instanceof GSPMDSharding) return [...deviceIdsOf(sharding.devices)];
  if (sharding instanceof SingleDeviceSharding) return [sharding.device.id];
  return [];
}
