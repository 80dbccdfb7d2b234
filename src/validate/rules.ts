/**
 * Rules that a model must obey whichever way it travels. Lowering turns a broken rule into an
 * EncodeError, decoding into a DecodeError; both use these same checks, and Python applies
 * them in the same order with the same paths (python/colocated_wire/validate.py).
 */

import type { HloSharding, Sharding } from "../model/sharding";
import { GSPMDSharding, NamedSharding } from "../model/sharding";

/** The largest device id the wire carries (JAX and IFRT ids are int32). */
export const MAX_DEVICE_ID = 0x7fffffff;

/** A broken rule: its DecodeError code, what is wrong, and where below the checked field. */
export interface Problem {
  code: "invalid-mesh" | "duplicate-device" | "unknown-axis" | "repeated-axis" | "invalid-value";
  detail: string;
  /** A path suffix such as `.axis_names[1]` or `[7]`; absent means the checked field itself. */
  at?: string;
}

/** Checks a mesh's axes against its device count: counts, names, then sizes. */
export function meshProblem(
  axisSizes: readonly number[],
  axisNames: readonly string[],
  axisTypeCount: number,
  deviceCount: number,
): Problem | undefined {
  if (axisNames.length !== axisSizes.length || axisTypeCount !== axisSizes.length) {
    const counts = `${axisSizes.length} sizes, ${axisNames.length} names, ${axisTypeCount} types`;
    return { code: "invalid-mesh", detail: `axis counts disagree: ${counts}` };
  }
  const seen = new Set<string>();
  for (const [k, name] of axisNames.entries()) {
    const at = `.axis_names[${k}]`;
    if (name === "") return { code: "invalid-value", detail: "an axis name is empty", at };
    if (seen.has(name)) return { code: "invalid-mesh", detail: `axis name "${name}" repeats`, at };
    seen.add(name);
  }
  const product = axisSizes.reduce((a, b) => a * b, 1);
  const at = ".axis_sizes";
  if (product !== deviceCount) {
    const shape = axisSizes.join("x") || "()";
    const detail = `axis sizes ${shape} hold ${product} devices, but the device list has ${deviceCount}`;
    return { code: "invalid-mesh", detail, at };
  }
  // JAX aborts the process on a sharding over an empty mesh.
  if (product === 0) return { code: "invalid-mesh", detail: "a mesh holds no devices", at };
  return undefined;
}

/** Checks a device list's ids: all in range first, then distinct; `at` is the index. */
export function deviceIdsProblem(ids: ArrayLike<number>): Problem | undefined {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id > MAX_DEVICE_ID) {
      const detail = `device id ${id} at position ${i} is not in [0, 2^31-1]`;
      return { code: "invalid-value", detail, at: `[${i}]` };
    }
  }
  const seen = new Set<number>();
  for (let i = 0; i < ids.length; i++) {
    if (seen.has(ids[i])) {
      return {
        code: "duplicate-device",
        detail: `device id ${ids[i]} appears twice`,
        at: `[${i}]`,
      };
    }
    seen.add(ids[i]);
  }
  return undefined;
}

/** Checks a tile assignment's logical devices: positions in a list of `deviceCount`, distinct. */
export function logicalIdsProblem(
  ids: readonly number[],
  deviceCount: number,
): Problem | undefined {
  const beyond = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= deviceCount);
  if (beyond >= 0) {
    const detail = `logical device ${ids[beyond]} is not in a list of ${deviceCount}`;
    return { code: "invalid-value", detail, at: `[${beyond}]` };
  }
  const seen = new Set<number>();
  for (const [i, id] of ids.entries()) {
    if (seen.has(id)) {
      return {
        code: "duplicate-device",
        detail: `logical device ${id} appears twice`,
        at: `[${i}]`,
      };
    }
    seen.add(id);
  }
  return undefined;
}

/** Where an axis of a PartitionSpec sits: in an entry, or in the unreduced or reduced set. */
export type AxisRole = "partition" | "unreduced" | "reduced";

/**
 * Checks the axes of one PartitionSpec, one at a time in order, as JAX does: every axis is a
 * mesh axis and used once (entries, unreduced and reduced together), unreduced and reduced
 * axes are Explicit, and UNCONSTRAINED needs an Auto axis.
 */
export class SpecAxisRules {
  readonly #typeOf: Map<string, string>;
  readonly #used = new Set<string>();

  constructor(
    readonly meshAxes: readonly string[],
    readonly meshTypes: readonly string[],
  ) {
    this.#typeOf = new Map(meshAxes.map((name, i) => [name, meshTypes[i]]));
  }

  /** The next axis the spec names. */
  axis(name: string, role: AxisRole): Problem | undefined {
    const type = this.#typeOf.get(name);
    if (type === undefined) {
      const axes = this.meshAxes.join(", ") || "none";
      return {
        code: "unknown-axis",
        detail: `axis "${name}" is not a mesh axis (mesh has ${axes})`,
      };
    }
    if (this.#used.has(name))
      return { code: "repeated-axis", detail: `axis "${name}" is used twice` };
    this.#used.add(name);
    if (role !== "partition" && type !== "Explicit")
      return { code: "invalid-value", detail: `${role} axis "${name}" is ${type}, not Explicit` };
    return undefined;
  }

  /** An UNCONSTRAINED entry. */
  unconstrained(): Problem | undefined {
    if (this.meshTypes.includes("Auto")) return undefined;
    return { code: "invalid-value", detail: "UNCONSTRAINED needs a mesh with an Auto axis" };
  }
}

/** The axes a PartitionSpec uses, by role. */
export interface SpecAxes {
  /** Axis names of the entries, in order. */
  partitions: readonly string[];
  unreduced: readonly string[];
  reduced: readonly string[];
  /** Whether an entry is UNCONSTRAINED. */
  unconstrained: boolean;
}

/** Checks a whole PartitionSpec against its mesh (see SpecAxisRules). */
export function specAxesProblem(
  spec: SpecAxes,
  meshAxes: readonly string[],
  meshTypes: readonly string[],
): Problem | undefined {
  const rules = new SpecAxisRules(meshAxes, meshTypes);
  const roles: [AxisRole, readonly string[]][] = [
    ["partition", spec.partitions],
    ["unreduced", spec.unreduced],
    ["reduced", spec.reduced],
  ];
  for (const [role, axes] of roles) {
    for (const name of axes) {
      const problem = rules.axis(name, role);
      if (problem) return problem;
    }
  }
  return spec.unconstrained ? rules.unconstrained() : undefined;
}

/** Checks an array shape: non-negative safe integers. */
export function shapeProblem(shape: readonly number[]): Problem | undefined {
  const bad = shape.findIndex((d) => !Number.isSafeInteger(d) || d < 0);
  if (bad >= 0)
    return { code: "invalid-value", detail: `dimension ${bad} is ${shape[bad]}, not a size` };
  return undefined;
}

/** Checks a GSPMD sharding's device count: JAX aborts the process on an empty device list. */
export function gspmdDevicesProblem(count: number): Problem | undefined {
  if (count > 0) return undefined;
  return { code: "invalid-value", detail: "a GSPMD sharding needs at least one device" };
}

/** Checks how many devices a GSPMD tile assignment holds for its type (XLA refuses others). */
export function tileCountProblem(type: HloSharding["type"], count: number): Problem | undefined {
  if (type === "maximal" && count !== 1)
    return { code: "invalid-value", detail: `a maximal sharding names 1 device, not ${count}` };
  if (type === "other" && count === 0)
    return { code: "invalid-value", detail: "a tile assignment holds at least one device" };
  return undefined;
}

/**
 * Checks a GSPMD sharding's trailing tile dims: only OTHER shardings have them, replicated
 * (replicate_on_last_tile_dim) or typed (last_tile_dims) but not both, and no more of them
 * than tile dims. XLA rejects or mishandles the rest (it runs out of memory on too many).
 */
export function trailingTileDimsProblem(
  type: HloSharding["type"],
  tileRank: number,
  replicateOnLastTileDim: boolean,
  lastTileDimCount: number,
): Problem | undefined {
  if (replicateOnLastTileDim) {
    const at = ".replicate_on_last_tile_dim";
    if (type !== "other")
      return { code: "invalid-value", detail: `a ${type} sharding has no tile dims`, at };
    if (tileRank === 0) return { code: "invalid-value", detail: "no tile dim to replicate", at };
  }
  if (lastTileDimCount > 0) {
    const at = ".last_tile_dims";
    if (type !== "other")
      return { code: "invalid-value", detail: `a ${type} sharding has no tile dims`, at };
    if (replicateOnLastTileDim) {
      const detail = "both replicate_on_last_tile_dim and last_tile_dims are set";
      return { code: "invalid-value", detail, at };
    }
    if (lastTileDimCount > tileRank) {
      const detail = `${lastTileDimCount} typed dims among ${tileRank} tile dims`;
      return { code: "invalid-value", detail, at };
    }
  }
  return undefined;
}

/**
 * Checks that a sharding may sit on an array of this shape, as jax.ShapeDtypeStruct checks it:
 * the array's rank covers the sharding's data dims, and a GSPMD sharding is not manual and
 * types its trailing tile dims only as replicated.
 */
export function leafShardingProblem(
  shape: readonly number[],
  sharding: Sharding | null,
): Problem | undefined {
  let rank = 0;
  if (sharding instanceof NamedSharding) {
    rank = sharding.spec.entries.length;
  } else if (sharding instanceof GSPMDSharding) {
    const { type, tileDims, replicateOnLastTileDim, lastTileDims } = sharding.hloSharding;
    if (type === "manual")
      return { code: "invalid-value", detail: "JAX puts no manual GSPMD sharding on an array" };
    if (lastTileDims.some((t) => t !== "replicated")) {
      const detail = "JAX puts no GSPMD sharding with manual or other typed tile dims on an array";
      return { code: "invalid-value", detail };
    }
    if (type === "maximal") rank = 1;
    if (type === "other")
      rank = tileDims.length - (replicateOnLastTileDim ? 1 : 0) - lastTileDims.length;
  }
  if (shape.length >= rank) return undefined;
  const detail = `a sharding of rank ${rank} does not fit an array of rank ${shape.length}`;
  return { code: "invalid-value", detail };
}
