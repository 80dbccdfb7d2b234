import {
  AxisType as AxisTypeMsg,
  type Entry,
  PartitionSpecEntryKind,
  type PartitionSpec as PartitionSpecMsg,
  ShardingType,
  type TileAssignment,
} from "../../gen/ts/colocated/v1/table";
import { EncodeError } from "../errors";
import { findIota } from "../iota";
import type { DeviceList } from "../model/device-list";
import { dtypeToWire } from "../model/dtype";
import type { AxisType, Mesh } from "../model/mesh";
import { type PartitionSpec, UNCONSTRAINED } from "../model/partition-spec";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type {
  GSPMDSharding,
  HloShardingType,
  NamedSharding,
  SingleDeviceSharding,
} from "../model/sharding";
import {
  deviceIdsProblem,
  gspmdDevicesProblem,
  leafShardingProblem,
  logicalIdsProblem,
  meshProblem,
  type Problem,
  shapeProblem,
  specAxesProblem,
  tileCountProblem,
  trailingTileDimsProblem,
} from "../validate/rules";
import { lowerDeviceIds } from "./device-ids";

/**
 * One table entry per model object, given the table indices of what it refers to. Each checks
 * its object first, so an impossible model fails here, before any bytes exist. The table
 * builder calls these once per distinct value.
 */

const AXIS_TYPES: Record<AxisType, AxisTypeMsg> = {
  Auto: AxisTypeMsg.AXIS_TYPE_AUTO,
  Explicit: AxisTypeMsg.AXIS_TYPE_EXPLICIT,
  Manual: AxisTypeMsg.AXIS_TYPE_MANUAL,
};

const SHARDING_TYPES: Record<HloShardingType, ShardingType> = {
  replicated: ShardingType.SHARDING_TYPE_REPLICATED,
  maximal: ShardingType.SHARDING_TYPE_MAXIMAL,
  other: ShardingType.SHARDING_TYPE_OTHER,
  manual: ShardingType.SHARDING_TYPE_MANUAL,
};

/** A DeviceList entry, in its smallest form. */
export function deviceListEntry(list: DeviceList, path: string): Entry {
  check(path, deviceIdsProblem(list.ids));
  return { kind: { $case: "deviceList", value: lowerDeviceIds(list.ids) } };
}

/** A Mesh entry on the device list entry `deviceList`. */
export function meshEntry(mesh: Mesh, deviceList: number, path: string): Entry {
  const { axisSizes, axisNames } = mesh;
  check(path, meshProblem(axisSizes, axisNames, mesh.axisTypes.length, mesh.devices.size));
  const axisTypes = mesh.axisTypes.map((t, i) => known(AXIS_TYPES, t, `${path}.axisTypes[${i}]`));
  return {
    kind: {
      $case: "mesh",
      value: { deviceList, axisSizes: [...axisSizes], axisNames: [...axisNames], axisTypes },
    },
  };
}

/** A NamedSharding entry on the mesh entry `mesh`. */
export function namedShardingEntry(sharding: NamedSharding, mesh: number, path: string): Entry {
  const { spec, mesh: model } = sharding;
  const axes = {
    partitions: spec.partitionAxes,
    unreduced: spec.unreduced,
    reduced: spec.reduced,
    unconstrained: spec.entries.includes(UNCONSTRAINED),
  };
  check(`${path}.spec`, specAxesProblem(axes, model.axisNames, model.axisTypes));
  const memoryKind = sharding.memoryKind ?? undefined;
  return {
    kind: { $case: "namedSharding", value: { mesh, spec: partitionSpec(spec), memoryKind } },
  };
}

/** A SingleDeviceSharding entry. */
export function singleDeviceShardingEntry(sharding: SingleDeviceSharding, path: string): Entry {
  const deviceId = sharding.device.id;
  check(path, deviceIdsProblem([deviceId]));
  const memoryKind = sharding.memoryKind ?? undefined;
  return { kind: { $case: "singleDeviceSharding", value: { deviceId, memoryKind } } };
}

/** A GspmdSharding entry on the device list entry `deviceList`. */
export function gspmdShardingEntry(
  sharding: GSPMDSharding,
  deviceList: number,
  path: string,
): Entry {
  const hlo = sharding.hloSharding;
  const type = known(SHARDING_TYPES, hlo.type, `${path}.hloSharding.type`);
  const tiled = hlo.type === "other" || hlo.type === "maximal";
  const size = sharding.devices.size;
  check(`${path}.devices`, gspmdDevicesProblem(size));
  check(`${path}.hloSharding`, tileProblem(hlo.tileDims, hlo.tileDevices, tiled, size));
  if (tiled) check(`${path}.hloSharding`, tileCountProblem(hlo.type, hlo.tileDevices.length));
  const { replicateOnLastTileDim, lastTileDims } = hlo;
  check(
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
        tileAssignment: tiled ? tileAssignment(hlo.tileDims, hlo.tileDevices) : undefined,
        replicateOnLastTileDim: hlo.replicateOnLastTileDim,
        lastTileDims: hlo.lastTileDims.map((t, i) =>
          known(SHARDING_TYPES, t, `${path}.lastTileDims[${i}]`),
        ),
        memoryKind: sharding.memoryKind ?? undefined,
      },
    },
  };
}

/** An ArraySpec entry on the sharding entry `sharding`, if any. */
export function arraySpecEntry(
  spec: ShapeDtypeStruct,
  sharding: number | undefined,
  path: string,
): Entry {
  check(`${path}.shape`, shapeProblem(spec.shape));
  check(`${path}.sharding`, leafShardingProblem(spec.shape, spec.sharding));
  const dtype = dtypeToWire(spec.dtype);
  if (dtype === undefined) throw new EncodeError(`${path}.dtype`, `unknown dtype "${spec.dtype}"`);
  const value = { shape: spec.shape.map(BigInt), dtype, sharding, weakType: spec.weakType };
  return { kind: { $case: "arraySpec", value } };
}

function partitionSpec(spec: PartitionSpec): PartitionSpecMsg {
  const { PARTITION_SPEC_ENTRY_KIND_NONE, PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED } =
    PartitionSpecEntryKind;
  const { PARTITION_SPEC_ENTRY_KIND_AXIS, PARTITION_SPEC_ENTRY_KIND_TUPLE } =
    PartitionSpecEntryKind;
  const entries = spec.entries.map((e) => {
    if (e === null) return { kind: PARTITION_SPEC_ENTRY_KIND_NONE, axes: [] };
    if (e === UNCONSTRAINED) return { kind: PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED, axes: [] };
    if (typeof e === "string") return { kind: PARTITION_SPEC_ENTRY_KIND_AXIS, axes: [e] };
    return { kind: PARTITION_SPEC_ENTRY_KIND_TUPLE, axes: [...(e as string[])] };
  });
  return { entries, unreduced: [...spec.unreduced], reduced: [...spec.reduced] };
}

function tileAssignment(dims: readonly number[], ids: readonly number[]): TileAssignment {
  const iota = findIota(ids);
  if (iota) {
    const layout = { reshapeDims: [...iota.reshapeDims], transposePerm: [...iota.transposePerm] };
    return { dims: [...dims], devices: { $case: "iota", value: layout } };
  }
  return { dims: [...dims], devices: { $case: "explicit", value: { ids: [...ids] } } };
}

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

function known<K extends string, V>(table: Record<K, V>, key: K, path: string): V {
  const value = table[key];
  if (value === undefined) throw new EncodeError(path, `unknown value "${key}"`);
  return value;
}

function check(path: string, problem: Problem | undefined): void {
  if (problem) throw new EncodeError(path, problem.detail);
}
