import {
  type ArraySpec,
  AxisType as AxisTypeMsg,
  Entry,
  PartitionSpecEntryKind,
  type PartitionSpec as PartitionSpecMsg,
  ShardingType,
  type TileAssignment,
} from "../../gen/ts/colocated/v1/table";
import { EncodeError } from "../errors";
import { findIota } from "../iota";
import { DeviceList } from "../model/device-list";
import { dtypeToWire } from "../model/dtype";
import { type AxisType, Mesh } from "../model/mesh";
import { type PartitionSpec, UNCONSTRAINED } from "../model/partition-spec";
import type { SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import {
  GSPMDSharding,
  type HloShardingType,
  NamedSharding,
  SingleDeviceSharding,
} from "../model/sharding";
import { UnknownEntry } from "../model/unknown-entry";
import { entryOrigin } from "../provenance";
import { graftUnknownFields } from "../unknown-fields";
import {
  deviceIdsProblem,
  meshProblem,
  type Problem,
  shapeProblem,
  specAxesProblem,
} from "../validate/rules";
import { lowerDeviceIds } from "./device-ids";

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

/**
 * Collects the shared objects of one payload into table entries, each equal value once.
 * An object is appended after its dependencies (post-order), so entries only refer backwards;
 * the first encounter fixes its index, which makes the table order canonical.
 */
export class TableBuilder {
  /** The entries, in index order. */
  readonly entries: Entry[] = [];
  /** The model object each entry was lowered from. */
  readonly objects: SharedObject[] = [];
  readonly #byValue = new Map<string, number>();
  readonly #byIdentity = new Map<object, number>();

  /** Adds an object (and what it refers to) and returns its table index. */
  add(object: SharedObject, path: string): number {
    const known = this.#byIdentity.get(object);
    if (known !== undefined) return known;
    const index = this.#lower(object, path);
    this.#byIdentity.set(object, index);
    return index;
  }

  #lower(object: SharedObject, path: string): number {
    if (object instanceof ShapeDtypeStruct) return this.#arraySpec(object, path);
    if (object instanceof NamedSharding) return this.#namedSharding(object, path);
    if (object instanceof Mesh) return this.#mesh(object, path);
    if (object instanceof DeviceList) return this.#deviceList(object, path);
    if (object instanceof SingleDeviceSharding) return this.#singleDeviceSharding(object, path);
    if (object instanceof GSPMDSharding) return this.#gspmdSharding(object, path);
    if (object instanceof UnknownEntry) {
      return this.#intern(object, `U${object.key}`, () => Entry.decode(object.bytes));
    }
    throw new EncodeError(path, `${describe(object)} is not a shared object`);
  }

  #intern(object: SharedObject, key: string, make: () => Entry): number {
    const found = this.#byValue.get(key);
    if (found !== undefined) return found;
    const index = this.entries.length;
    const entry = make();
    const origin = entryOrigin(object);
    if (origin) graftUnknownFields(origin, entry);
    this.entries.push(entry);
    this.objects.push(object);
    this.#byValue.set(key, index);
    return index;
  }

  #deviceList(list: DeviceList, path: string): number {
    check(path, deviceIdsProblem(list.ids));
    return this.#intern(list, `D${list.ids.join(",")}`, () => ({
      kind: { $case: "deviceList", value: lowerDeviceIds(list.ids) },
    }));
  }

  #mesh(mesh: Mesh, path: string): number {
    const deviceList = this.add(mesh.devices, `${path}.devices`);
    const { axisSizes, axisNames } = mesh;
    check(path, meshProblem(axisSizes, axisNames, mesh.axisTypes.length, mesh.devices.size));
    const axisTypes = mesh.axisTypes.map((t, i) => {
      const wire = AXIS_TYPES[t];
      if (wire === undefined)
        throw new EncodeError(`${path}.axisTypes[${i}]`, `unknown axis type ${t}`);
      return wire;
    });
    const key = `M${deviceList}${JSON.stringify([axisSizes, axisNames, axisTypes])}`;
    return this.#intern(mesh, key, () => ({
      kind: {
        $case: "mesh",
        value: { deviceList, axisSizes: [...axisSizes], axisNames: [...axisNames], axisTypes },
      },
    }));
  }

  #namedSharding(sharding: NamedSharding, path: string): number {
    const mesh = this.add(sharding.mesh, `${path}.mesh`);
    const { spec: model, mesh: meshModel } = sharding;
    const axes = {
      partitions: model.partitionAxes,
      unreduced: model.unreduced,
      reduced: model.reduced,
      unconstrained: model.entries.includes(UNCONSTRAINED),
    };
    check(`${path}.spec`, specAxesProblem(axes, meshModel.axisNames, meshModel.axisTypes));
    const spec = lowerPartitionSpec(sharding.spec);
    const memoryKind = sharding.memoryKind ?? undefined;
    const key = `N${mesh}${JSON.stringify([sharding.spec.key, memoryKind])}`;
    return this.#intern(sharding, key, () => ({
      kind: { $case: "namedSharding", value: { mesh, spec, memoryKind } },
    }));
  }

  #singleDeviceSharding(sharding: SingleDeviceSharding, path: string): number {
    const deviceId = sharding.device.id;
    check(path, deviceIdsProblem([deviceId]));
    const memoryKind = sharding.memoryKind ?? undefined;
    return this.#intern(sharding, `S${JSON.stringify([deviceId, memoryKind])}`, () => ({
      kind: { $case: "singleDeviceSharding", value: { deviceId, memoryKind } },
    }));
  }

  #gspmdSharding(sharding: GSPMDSharding, path: string): number {
    const deviceList = this.add(sharding.devices, `${path}.devices`);
    const hlo = sharding.hloSharding;
    const type = SHARDING_TYPES[hlo.type];
    if (type === undefined)
      throw new EncodeError(`${path}.hloSharding.type`, `unknown type ${hlo.type}`);
    const tiled = hlo.type === "other" || hlo.type === "maximal";
    check(
      `${path}.hloSharding`,
      tileProblem(hlo.tileDims, hlo.tileDevices, tiled, sharding.devices.size),
    );
    const tileAssignment = tiled ? lowerTileAssignment(hlo.tileDims, hlo.tileDevices) : undefined;
    const lastTileDims = hlo.lastTileDims.map((t) => SHARDING_TYPES[t]);
    const memoryKind = sharding.memoryKind ?? undefined;
    const key = `G${deviceList}${JSON.stringify([hlo, memoryKind])}`;
    return this.#intern(sharding, key, () => ({
      kind: {
        $case: "gspmdSharding",
        value: {
          deviceList,
          type,
          tileAssignment,
          replicateOnLastTileDim: hlo.replicateOnLastTileDim,
          lastTileDims,
          memoryKind,
        },
      },
    }));
  }

  #arraySpec(spec: ShapeDtypeStruct, path: string): number {
    const sharding = spec.sharding ? this.add(spec.sharding, `${path}.sharding`) : undefined;
    check(`${path}.shape`, shapeProblem(spec.shape));
    const dtype = dtypeToWire(spec.dtype);
    if (dtype === undefined)
      throw new EncodeError(`${path}.dtype`, `unknown dtype "${spec.dtype}"`);
    const key = `A${sharding ?? ""}${JSON.stringify([spec.shape, dtype, spec.weakType])}`;
    const value: ArraySpec = {
      shape: spec.shape.map(BigInt),
      dtype,
      sharding,
      weakType: spec.weakType,
    };
    return this.#intern(spec, key, () => ({ kind: { $case: "arraySpec", value } }));
  }
}

function lowerPartitionSpec(spec: PartitionSpec): PartitionSpecMsg {
  const entries = spec.entries.map((e) => {
    if (e === null)
      return { kind: PartitionSpecEntryKind.PARTITION_SPEC_ENTRY_KIND_NONE, axes: [] };
    if (e === UNCONSTRAINED) {
      return { kind: PartitionSpecEntryKind.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED, axes: [] };
    }
    if (typeof e === "string")
      return { kind: PartitionSpecEntryKind.PARTITION_SPEC_ENTRY_KIND_AXIS, axes: [e] };
    return {
      kind: PartitionSpecEntryKind.PARTITION_SPEC_ENTRY_KIND_TUPLE,
      axes: [...(e as string[])],
    };
  });
  return { entries, unreduced: [...spec.unreduced], reduced: [...spec.reduced] };
}

function lowerTileAssignment(dims: readonly number[], ids: readonly number[]): TileAssignment {
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
  const bad = ids.find((id) => !Number.isInteger(id) || id < 0 || id >= deviceCount);
  if (bad !== undefined) {
    return {
      code: "invalid-value",
      detail: `logical device ${bad} is not in a list of ${deviceCount}`,
    };
  }
  return new Set(ids).size === ids.length
    ? undefined
    : { code: "duplicate-device", detail: "a logical device appears twice in the tile assignment" };
}

function check(path: string, problem: Problem | undefined): void {
  if (problem) throw new EncodeError(path, problem.detail);
}

function describe(value: unknown): string {
  return value?.constructor?.name ?? typeof value;
}
