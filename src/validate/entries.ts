import {
  type ArraySpec,
  AxisType as AxisTypeMsg,
  PartitionSpecEntryKind as EntryKind,
  type GspmdSharding,
  type Mesh as MeshMsg,
  type NamedSharding as NamedShardingMsg,
  type PartitionSpec as PartitionSpecMsg,
  ShardingType,
  type SingleDeviceSharding as SingleDeviceShardingMsg,
  type TileAssignment,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import { materializeIota } from "../iota";
import type { DecodeLimits } from "../limits";
import type { DeviceList } from "../model/device-list";
import { type DTypeName, dtypeFromWire } from "../model/dtype";
import type { AxisType, Mesh } from "../model/mesh";
import { PartitionSpec, type PartitionSpecEntry, UNCONSTRAINED } from "../model/partition-spec";
import type { HloSharding, HloShardingType, Sharding } from "../model/sharding";
import { checkIotaLayout } from "./device-list";
import { ACCEPTS } from "./kinds";
import type { References } from "./reference";
import {
  deviceIdsProblem,
  gspmdDevicesProblem,
  leafShardingProblem,
  logicalIdsProblem,
  meshProblem,
  type Problem,
  SpecAxisRules,
  tileCountProblem,
  trailingTileDimsProblem,
} from "./rules";

/** Where an entry sits: its index, its path, and the references lifted before it. */
export interface EntryContext {
  index: number;
  path: string;
  refs: References;
  limits: DecodeLimits;
}

const AXIS_TYPES = new Map<number, AxisType>([
  [AxisTypeMsg.AXIS_TYPE_AUTO, "Auto"],
  [AxisTypeMsg.AXIS_TYPE_EXPLICIT, "Explicit"],
  [AxisTypeMsg.AXIS_TYPE_MANUAL, "Manual"],
]);

const SHARDING_TYPES = new Map<number, HloShardingType>([
  [ShardingType.SHARDING_TYPE_REPLICATED, "replicated"],
  [ShardingType.SHARDING_TYPE_MAXIMAL, "maximal"],
  [ShardingType.SHARDING_TYPE_OTHER, "other"],
  [ShardingType.SHARDING_TYPE_MANUAL, "manual"],
]);

/** Checks a Mesh entry; returns its constructor arguments. */
export function checkMesh(message: MeshMsg, ctx: EntryContext) {
  const { path, refs, index, limits } = ctx;
  const devices = refs.require(
    message.deviceList,
    index,
    `${path}.device_list`,
    ACCEPTS.deviceList,
  );
  if (message.axisSizes.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.axis_sizes`,
      "limit-exceeded",
      `${message.axisSizes.length} axes pass the limit of ${limits.maxRank}`,
    );
  }
  const axisTypes = message.axisTypes.map((t, i) =>
    known(AXIS_TYPES, t, `${path}.axis_types[${i}]`, "axis type"),
  );
  raise(path, meshProblem(message.axisSizes, message.axisNames, axisTypes.length, devices.size));
  return { devices, axisSizes: message.axisSizes, axisNames: message.axisNames, axisTypes };
}

/** Checks a NamedSharding entry against its mesh; returns its constructor arguments. */
export function checkNamedSharding(message: NamedShardingMsg, ctx: EntryContext) {
  const { path, refs, index } = ctx;
  const mesh: Mesh = refs.require(message.mesh, index, `${path}.mesh`, ACCEPTS.mesh);
  const specMessage = message.spec ?? { entries: [], unreduced: [], reduced: [] };
  const spec = checkPartitionSpec(specMessage, `${path}.spec`, mesh);
  return { mesh, spec, memoryKind: memoryKind(message.memoryKind, path) };
}

/** Checks a SingleDeviceSharding entry. */
export function checkSingleDeviceSharding(message: SingleDeviceShardingMsg, ctx: EntryContext) {
  const problem = deviceIdsProblem([message.deviceId]);
  if (problem) throw new DecodeError(`${ctx.path}.device_id`, problem.code, problem.detail);
  return { deviceId: message.deviceId, memoryKind: memoryKind(message.memoryKind, ctx.path) };
}

/** Checks a GspmdSharding entry in field order, sizing its tile assignment before writing it out. */
export function checkGspmdSharding(message: GspmdSharding, ctx: EntryContext) {
  const { path, refs, index } = ctx;
  const devices: DeviceList = refs.require(
    message.deviceList,
    index,
    `${path}.device_list`,
    ACCEPTS.deviceList,
  );
  raise(`${path}.device_list`, gspmdDevicesProblem(devices.size));
  const type = known(SHARDING_TYPES, message.type, `${path}.type`, "sharding type");
  const tiled = type === "other" || type === "maximal";
  const tilePath = `${path}.tile_assignment`;
  let tile = { dims: [] as number[], devices: [] as number[] };
  if (tiled) {
    if (!message.tileAssignment)
      throw new DecodeError(tilePath, "missing", `a ${type} sharding needs a tile assignment`);
    tile = checkTileAssignment(message.tileAssignment, tilePath, type, devices.size, ctx.limits);
  } else if (message.tileAssignment) {
    throw new DecodeError(tilePath, "invalid-value", `a ${type} sharding has no tile assignment`);
  }
  const lastTileDims = message.lastTileDims.map((t, i) =>
    known(SHARDING_TYPES, t, `${path}.last_tile_dims[${i}]`, "sharding type"),
  );
  const { replicateOnLastTileDim } = message;
  raise(
    path,
    trailingTileDimsProblem(type, tile.dims.length, replicateOnLastTileDim, lastTileDims.length),
  );
  const hloSharding: HloSharding = {
    type,
    tileDims: tile.dims,
    tileDevices: tile.devices,
    replicateOnLastTileDim,
    lastTileDims,
  };
  return { devices, hloSharding, memoryKind: memoryKind(message.memoryKind, path) };
}

/** Checks an ArraySpec entry; returns its constructor arguments. */
export function checkArraySpec(message: ArraySpec, ctx: EntryContext) {
  const { path, refs, index, limits } = ctx;
  if (message.shape.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.shape`,
      "limit-exceeded",
      `rank ${message.shape.length} passes the limit of ${limits.maxRank}`,
    );
  }
  const shape = message.shape.map((d, i) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError(`${path}.shape[${i}]`, "invalid-value", `dimension ${d} passes 2^53-1`);
    }
    return Number(d);
  });
  const dtype: DTypeName | undefined = dtypeFromWire(message.dtype);
  if (dtype === undefined)
    throw new DecodeError(`${path}.dtype`, "unknown-enum", `unknown dtype ${message.dtype}`);
  const sharding: Sharding | null =
    refs.optional(message.sharding, index, `${path}.sharding`, ACCEPTS.sharding) ?? null;
  raise(`${path}.sharding`, leafShardingProblem(shape, sharding));
  return { shape, dtype, sharding, weakType: message.weakType };
}

function checkTileAssignment(
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

/** Checks each entry (kind, arity, axes), then unreduced and reduced, in order. */
function checkPartitionSpec(message: PartitionSpecMsg, path: string, mesh: Mesh): PartitionSpec {
  const rules = new SpecAxisRules(mesh.axisNames, mesh.axisTypes);
  const entries = message.entries.map((entry, i): PartitionSpecEntry => {
    const at = `${path}.entries[${i}]`;
    const arity = (expected: number) => {
      if (entry.axes.length !== expected) {
        throw new DecodeError(
          `${at}.axes`,
          "invalid-value",
          `expected ${expected} axes, got ${entry.axes.length}`,
        );
      }
    };
    const axes = () => {
      for (const [k, name] of entry.axes.entries())
        raise(`${at}.axes[${k}]`, rules.axis(name, "partition"));
    };
    switch (entry.kind) {
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_NONE:
        arity(0);
        return null;
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
        arity(0);
        raise(at, rules.unconstrained());
        return UNCONSTRAINED;
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_AXIS:
        arity(1);
        axes();
        return entry.axes[0];
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_TUPLE:
        axes();
        return entry.axes;
      default:
        throw new DecodeError(
          `${at}.kind`,
          "unknown-enum",
          `unknown partition spec entry kind ${entry.kind}`,
        );
    }
  });
  for (const role of ["unreduced", "reduced"] as const) {
    for (const [k, name] of message[role].entries())
      raise(`${path}.${role}[${k}]`, rules.axis(name, role));
  }
  return PartitionSpec.create(entries, { unreduced: message.unreduced, reduced: message.reduced });
}

function memoryKind(value: string | undefined, path: string): string | null {
  if (value === "")
    throw new DecodeError(`${path}.memory_kind`, "invalid-value", "an empty memory kind");
  return value ?? null;
}

function known<T>(table: Map<number, T>, value: number, path: string, what: string): T {
  const found = table.get(value);
  if (found === undefined) throw new DecodeError(path, "unknown-enum", `unknown ${what} ${value}`);
  return found;
}

/** Throws a broken rule as a DecodeError at `path` plus the rule's own suffix. */
function raise(path: string, problem: Problem | undefined): void {
  if (problem) throw new DecodeError(`${path}${problem.at ?? ""}`, problem.code, problem.detail);
}
