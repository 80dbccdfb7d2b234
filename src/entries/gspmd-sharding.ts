import {
  type Entry,
  type GspmdSharding as MessageType,
  ShardingType,
  type TileAssignment,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError, EncodeError } from "../errors";
import { findIota, materializeIota } from "../iota";
import type { DecodeLimits } from "../limits";
import type { DeviceList } from "../model/device-list";
import { GSPMDSharding, type HloShardingType } from "../model/sharding";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import { checkIotaLayout, DEVICE_LIST } from "./device-list";
import { enumNames, lowercase, type Suffixes } from "./enum-names";
import { checkMemoryKind } from "./memory-kind";
import { type Problem, raise, refuse } from "./problem";

/** Sharding types by name: SHARDING_TYPE_OTHER is "other". */
export const SHARDING_TYPES = enumNames<
  HloShardingType,
  Lowercase<Suffixes<typeof ShardingType, "SHARDING_TYPE_">>
>(ShardingType, "SHARDING_TYPE_", lowercase);

/** What checking a GSPMD sharding found: its types by name and its tiles, written out. */
export interface GspmdShardingFacts {
  readonly type: HloShardingType;
  readonly tileDims: number[];
  /** Logical devices, positions in the device list. */
  readonly tileDevices: number[];
  readonly lastTileDims: HloShardingType[];
}

/** A GSPMDSharding's value: its device list's index, then its HloSharding and memory kind. */
export function key(sharding: GSPMDSharding, ctx: LowerContext): ValueKey {
  const deviceList = ctx.table.add(sharding.devices, () => `${ctx.path}.devices`);
  return [deviceList, JSON.stringify([sharding.hloSharding, sharding.memoryKind])];
}

/** A GspmdSharding entry on its device list's entry. */
export function lower(sharding: GSPMDSharding, ctx: LowerContext): Entry {
  const { path } = ctx;
  const deviceList = ctx.table.add(sharding.devices, `${path}.devices`);
  const hlo = sharding.hloSharding;
  const type = wireType(hlo.type, `${path}.hloSharding.type`);
  const tiled = hlo.type === "other" || hlo.type === "maximal";
  const size = sharding.devices.size;
  refuse(`${path}.devices`, gspmdDevicesProblem(size));
  refuse(`${path}.hloSharding`, tileProblem(hlo.tileDims, hlo.tileDevices, tiled, size));
  if (tiled) refuse(`${path}.hloSharding`, tileCountProblem(hlo.type, hlo.tileDevices.length));
  const { replicateOnLastTileDim, lastTileDims } = hlo;
  refuse(
    `${path}.hloSharding`,
    trailingTileDimsProblem(
      hlo.type,
      hlo.tileDims.length,
      replicateOnLastTileDim,
      lastTileDims.length,
    ),
  );
  return {
    kind: {
      $case: "gspmdSharding",
      value: {
        deviceList,
        type,
        tileAssignment: tiled ? lowerTiles(hlo.tileDims, hlo.tileDevices) : undefined,
        replicateOnLastTileDim,
        lastTileDims: lastTileDims.map((t, i) => wireType(t, `${path}.lastTileDims[${i}]`)),
        memoryKind: sharding.memoryKind ?? undefined,
      },
    },
  };
}

/** Checks a GspmdSharding message in field order, sizing its tile assignment before writing it out. */
export function check(message: MessageType, ctx: CheckContext): GspmdShardingFacts {
  const { path, refs, index } = ctx;
  const devices = refs.require(message.deviceList, index, `${path}.device_list`, DEVICE_LIST);
  const deviceCount = devices.facts.size;
  raise(`${path}.device_list`, gspmdDevicesProblem(deviceCount));
  const type = knownType(message.type, `${path}.type`);
  const tiled = type === "other" || type === "maximal";
  const tilePath = `${path}.tile_assignment`;
  let tile = { dims: [] as number[], devices: [] as number[] };
  if (tiled) {
    if (!message.tileAssignment)
      throw new DecodeError(tilePath, "missing", `a ${type} sharding needs a tile assignment`);
    tile = checkTiles(message.tileAssignment, tilePath, type, deviceCount, ctx.limits);
  } else if (message.tileAssignment) {
    throw new DecodeError(tilePath, "invalid-value", `a ${type} sharding has no tile assignment`);
  }
  const lastTileDims = message.lastTileDims.map((t, i) =>
    knownType(t, `${path}.last_tile_dims[${i}]`),
  );
  const { replicateOnLastTileDim } = message;
  raise(
    path,
    trailingTileDimsProblem(type, tile.dims.length, replicateOnLastTileDim, lastTileDims.length),
  );
  checkMemoryKind(message.memoryKind, path);
  return { type, tileDims: tile.dims, tileDevices: tile.devices, lastTileDims };
}

/** A checked GspmdSharding, on its lifted device list. */
export function lift(message: MessageType, ctx: LiftContext<GspmdShardingFacts>): GSPMDSharding {
  const devices = ctx.objects[message.deviceList as number] as DeviceList;
  const { type, tileDims, tileDevices, lastTileDims } = ctx.facts;
  const { replicateOnLastTileDim } = message;
  const hloSharding = { type, tileDims, tileDevices, replicateOnLastTileDim, lastTileDims };
  return new GSPMDSharding(devices, hloSharding, { memoryKind: message.memoryKind ?? null });
}

/** Checks a GSPMD sharding's device count: JAX aborts the process on an empty device list. */
export function gspmdDevicesProblem(count: number): Problem | undefined {
  if (count > 0) return undefined;
  return { code: "invalid-value", detail: "a GSPMD sharding needs at least one device" };
}

/** Checks how many devices a GSPMD tile assignment holds for its type (XLA refuses others). */
export function tileCountProblem(type: HloShardingType, count: number): Problem | undefined {
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
  type: HloShardingType,
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

/** Checks a model's tiles: none unless tiled, else as many logical devices as the dims hold. */
function tileProblem(
  dims: readonly number[],
  ids: readonly number[],
  tiled: boolean,
  deviceCount: number,
): Problem | undefined {
  if (!tiled) {
    if (dims.length === 0 && ids.length === 0) return undefined;
    return {
      code: "invalid-value",
      detail: "a replicated or manual sharding has no tile assignment",
    };
  }
  const size = dims.reduce((a, b) => a * b, 1);
  if (size !== ids.length) {
    return {
      code: "invalid-value",
      detail: `tile dims hold ${size} devices, but ${ids.length} are given`,
    };
  }
  return logicalIdsProblem(ids, deviceCount);
}

function checkTiles(
  message: TileAssignment,
  path: string,
  type: HloShardingType,
  deviceCount: number,
  limits: DecodeLimits,
) {
  const dims = message.dims;
  if (dims.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.dims`,
      "limit-exceeded",
      `${dims.length} dims pass the limit of ${limits.maxRank}`,
    );
  }
  const size = dims.reduce((a, b) => a * b, 1);
  if (size > limits.maxDevicesPerList) {
    throw new DecodeError(
      `${path}.dims`,
      "limit-exceeded",
      `${size} tiles pass the limit of ${limits.maxDevicesPerList}`,
    );
  }
  raise(`${path}.dims`, tileCountProblem(type, size));
  const form = message.devices;
  if (form?.$case === "iota") {
    const iotaPath = `${path}.iota`;
    const iotaSize = checkIotaLayout(form.value, iotaPath, limits);
    if (iotaSize !== size) {
      const detail = `the iota has ${iotaSize} elements, the tile dims ${size}`;
      throw new DecodeError(`${iotaPath}.reshape_dims`, "invalid-iota", detail);
    }
    if (size > deviceCount) {
      const detail = `${size} tiles for a list of ${deviceCount} devices`;
      throw new DecodeError(`${iotaPath}.reshape_dims`, "invalid-value", detail);
    }
    // Distinct positions below the size, so within the device list.
    return { dims: [...dims], devices: Array.from(materializeIota(form.value)) };
  }
  if (form?.$case !== "explicit") {
    throw new DecodeError(
      `${path}.devices`,
      "missing",
      "no known tile device form (iota or explicit)",
    );
  }
  const ids = form.value.ids;
  const idsPath = `${path}.explicit.ids`;
  if (ids.length !== size) {
    const detail = `${ids.length} ids for tile dims holding ${size}`;
    throw new DecodeError(idsPath, "invalid-value", detail);
  }
  raise(idsPath, logicalIdsProblem(ids, deviceCount));
  return { dims: [...dims], devices: [...ids] };
}

function lowerTiles(dims: readonly number[], ids: readonly number[]): TileAssignment {
  const iota = findIota(ids);
  if (iota) {
    const layout = { reshapeDims: [...iota.reshapeDims], transposePerm: [...iota.transposePerm] };
    return { dims: [...dims], devices: { $case: "iota", value: layout } };
  }
  return { dims: [...dims], devices: { $case: "explicit", value: { ids: [...ids] } } };
}

function knownType(value: number, path: string): HloShardingType {
  const name = SHARDING_TYPES.name(value);
  if (name === undefined)
    throw new DecodeError(path, "unknown-enum", `unknown sharding type ${value}`);
  return name;
}

function wireType(name: HloShardingType, path: string): ShardingType {
  const value = SHARDING_TYPES.value(name);
  if (value === undefined) throw new EncodeError(path, `unknown value "${name}"`);
  return value as ShardingType;
}
