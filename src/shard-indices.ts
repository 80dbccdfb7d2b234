/**
 * Which slice of a global array each device holds: JAX's `sharding.devices_indices_map(shape)`
 * and `sharding.shard_shape(shape)`, computed from a lifted sharding. It follows JAX's own
 * path (jax/_src/op_shardings.py): the sharding as tiles of the array, tiles split evenly,
 * each tile's devices in tile-assignment order; replicated dimensions are whole.
 */
import { deviceIdsOf } from "./model/device-list";
import { AxisType } from "./model/mesh";
import { UNCONSTRAINED } from "./model/partition-spec";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "./model/sharding";

/** One shard's place in the global array: per dimension, the half-open range [start, stop). */
export interface ShardIndex {
  readonly start: readonly number[];
  readonly stop: readonly number[];
}

/** A device (by id) and the slice of the global array it holds. */
export interface DeviceShard {
  readonly device: number;
  readonly index: ShardIndex;
}

/** A slice of the global array and every device holding it, in device-assignment order. */
export interface DistinctShard {
  readonly index: ShardIndex;
  readonly devices: readonly number[];
}

/**
 * Why JAX cannot map this sharding over this shape: `indivisible` (a dimension does not split
 * evenly, JAX's IndivisibleError), `rank` (the sharding names more dimensions than the array
 * has), `unsupported` (manual or unreduced axes, which JAX's map refuses too), `unknown` (a
 * sharding from a newer schema).
 */
export class ShardIndexError extends Error {
  override readonly name = "ShardIndexError";

  constructor(
    readonly kind: "indivisible" | "rank" | "unsupported" | "unknown",
    message: string,
  ) {
    super(message);
  }
}

/** The tiles: how many ways each dimension splits, each tile's copies, and who holds which. */
interface Tiling {
  /** The devices in assignment order (the order of the map). */
  devices: readonly number[];
  /** Splits per array dimension; undefined when the array is replicated on every device. */
  partitions?: readonly number[];
  /** Devices per tile. */
  replicas?: number;
  /** Positions in `devices`, tile by tile (row-major over `partitions`), replicas together. */
  tileDevices?: ArrayLike<number>;
}

/** jax's `sharding.shard_shape(shape)`: the shape every device's shard has. */
export function shardShape(sharding: Sharding, shape: readonly number[]): number[] {
  const tiling = tilingOf(sharding, shape.length);
  return tiling.partitions === undefined
    ? [...shape]
    : splitShape(sharding, shape, tiling.partitions);
}

/** jax's `sharding.devices_indices_map(shape)`, in the map's order (the device assignment). */
export function devicesIndicesMap(sharding: Sharding, shape: readonly number[]): DeviceShard[] {
  const tiling = tilingOf(sharding, shape.length);
  const whole = { start: shape.map(() => 0), stop: [...shape] };
  if (tiling.partitions === undefined) {
    return tiling.devices.map((device) => ({ device, index: whole }));
  }
  const { partitions, replicas = 1, tileDevices = [0] } = tiling;
  const size = splitShape(sharding, shape, partitions);
  const indices = new Array<ShardIndex>(tiling.devices.length);
  const tiles = partitions.reduce((n, p) => n * p, 1);
  const coords = partitions.map(() => 0);
  for (let tile = 0, k = 0; tile < tiles; tile++) {
    const start = coords.map((c, d) => c * size[d]);
    const index = { start, stop: start.map((s, d) => s + size[d]) };
    for (let r = 0; r < replicas; r++) indices[tileDevices[k++]] = index;
    for (let d = coords.length - 1; d >= 0 && ++coords[d] === partitions[d]; d--) coords[d] = 0;
  }
  return tiling.devices.map((device, i) => ({ device, index: indices[i] }));
}

/** The distinct slices of the map, in order of first appearance, each with its devices. */
export function distinctShards(sharding: Sharding, shape: readonly number[]): DistinctShard[] {
  const byKey = new Map<string, { index: ShardIndex; devices: number[] }>();
  for (const { device, index } of devicesIndicesMap(sharding, shape)) {
    const key = `${index.start}|${index.stop}`;
    const found = byKey.get(key);
    if (found) found.devices.push(device);
    else byKey.set(key, { index, devices: [device] });
  }
  return [...byKey.values()];
}

/** `[start:stop, ...]`, as error messages name a shard. */
export function describeIndex(index: ShardIndex): string {
  return `[${index.start.map((s, d) => `${s}:${index.stop[d]}`).join(",")}]`;
}

function splitShape(
  sharding: Sharding,
  shape: readonly number[],
  partitions: readonly number[],
): number[] {
  return shape.map((dim, d) => {
    const p = partitions[d];
    if (dim % p !== 0) {
      throw new ShardIndexError(
        "indivisible",
        `${describe(sharding)} splits array axis ${d} ${p} times, but the dimension size is ${dim}` +
          ` (full shape: [${shape}], per-dimension tiling factors [${partitions}] must divide it evenly)`,
      );
    }
    return dim / p;
  });
}

function tilingOf(sharding: Sharding, rank: number): Tiling {
  if (sharding instanceof SingleDeviceSharding) {
    return { devices: [sharding.device.id], replicas: 1, tileDevices: [0] };
  }
  if (sharding instanceof NamedSharding) return namedTiling(sharding, rank);
  if (sharding instanceof GSPMDSharding) return gspmdTiling(sharding, rank);
  throw new ShardIndexError("unknown", "a sharding from a newer schema has no known device map");
}

/** JAX's named_sharding_to_xla_hlo_sharding, keeping only what the map needs. */
function namedTiling(sharding: NamedSharding, rank: number): Tiling {
  const { mesh, spec } = sharding;
  const devices = [...deviceIdsOf(mesh.devices)];
  // Axes of size one change nothing; JAX drops them first.
  const live = mesh.axisNames.map((_, i) => i).filter((i) => mesh.axisSizes[i] !== 1);
  // Mesh axis -> array dimension, in spec order: within a dimension the first axis named
  // is the most significant.
  const position = new Map<string, number>();
  spec.entries.forEach((entry, d) => {
    if (entry === null || entry === UNCONSTRAINED) return;
    for (const axis of typeof entry === "string" ? [entry] : (entry as readonly string[])) {
      position.set(axis, d);
    }
  });
  const special = live.filter(
    (i) => mesh.axisTypes[i] === AxisType.Manual || spec.unreduced.includes(mesh.axisNames[i]),
  );
  if (special.length > 0) {
    const names = special.map((i) => mesh.axisNames[i]).join(", ");
    throw new ShardIndexError(
      "unsupported",
      `${describe(sharding)}: JAX has no device map for manual or unreduced mesh axes (${names})`,
    );
  }
  const axisOf = new Map(mesh.axisNames.map((name, i) => [name, i]));
  const sharded = [...position.keys()]
    .map((name) => axisOf.get(name) as number)
    .filter((i) => mesh.axisSizes[i] !== 1);
  if (sharded.length === 0) return { devices };
  const dimOf = (i: number) => position.get(mesh.axisNames[i]) as number;
  const partitions = new Array<number>(rank).fill(1);
  for (const i of sharded) {
    const d = dimOf(i);
    if (d >= rank) {
      throw new ShardIndexError(
        "rank",
        `${describe(sharding)} shards dimension ${d}, but the array has rank ${rank}`,
      );
    }
    partitions[d] *= mesh.axisSizes[i];
  }
  const replicated = live.filter((i) => !position.has(mesh.axisNames[i]));
  const perm = [...sharded, ...replicated];
  const replicas = replicated.reduce((n, i) => n * mesh.axisSizes[i], 1);
  return { devices, partitions, replicas, tileDevices: transposedIota(mesh.axisSizes, live, perm) };
}

/**
 * iota(prod sizes).reshape(sizes).transpose(perm).flat, over the live axes only (size-one
 * axes contribute nothing): the mesh positions in the order of the permuted axes.
 */
function transposedIota(sizes: readonly number[], live: number[], perm: number[]): Int32Array {
  const stride = new Array<number>(sizes.length).fill(0);
  for (let i = sizes.length - 1, s = 1; i >= 0; i--) {
    stride[i] = s;
    s *= sizes[i];
  }
  const total = live.reduce((n, i) => n * sizes[i], 1);
  const out = new Int32Array(total);
  const coords = perm.map(() => 0);
  for (let k = 0; k < total; k++) {
    let at = 0;
    for (let j = 0; j < perm.length; j++) at += coords[j] * stride[perm[j]];
    out[k] = at;
    for (let j = perm.length - 1; j >= 0 && ++coords[j] === sizes[perm[j]]; j--) coords[j] = 0;
  }
  return out;
}

/** JAX's op_sharding_to_numpy_indices over a GSPMDSharding's HloSharding. */
function gspmdTiling(sharding: GSPMDSharding, rank: number): Tiling {
  const devices = [...deviceIdsOf(sharding.devices)];
  const h = sharding.hloSharding;
  const tiles = h.tileDims.reduce((n, d) => n * d, 1);
  // JAX treats a one-device sharding as replicated, as XLA does (maximal is one device).
  if (h.type === "replicated" || h.type === "maximal" || (h.type === "other" && tiles === 1)) {
    return { devices };
  }
  if (h.type === "manual") {
    throw new ShardIndexError(
      "unsupported",
      `${describe(sharding)}: JAX has no device map for manual shardings`,
    );
  }
  const partitions = [...h.tileDims];
  let replicas = 1;
  const subgroups = h.lastTileDims;
  if (h.replicateOnLastTileDim || (subgroups.length === 1 && subgroups[0] === "replicated")) {
    replicas = partitions.pop() as number;
  } else if (subgroups.length > 0) {
    throw new ShardIndexError(
      "unsupported",
      `${describe(sharding)}: JAX has no device map for last tile dims [${subgroups}]`,
    );
  }
  if (partitions.length !== rank) {
    throw new ShardIndexError(
      "rank",
      `${describe(sharding)} tiles ${partitions.length} dimensions, but the array has rank ${rank}`,
    );
  }
  if (h.tileDevices.length !== devices.length) {
    throw new ShardIndexError(
      "unsupported",
      `${describe(sharding)} assigns ${h.tileDevices.length} tiles for ${devices.length} devices`,
    );
  }
  return { devices, partitions, replicas, tileDevices: h.tileDevices };
}

function describe(sharding: Sharding): string {
  if (sharding instanceof NamedSharding) {
    return `NamedSharding over mesh [${sharding.mesh.axisNames}] of sizes [${sharding.mesh.axisSizes}]`;
  }
  return sharding.constructor.name;
}
