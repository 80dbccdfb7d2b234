import { Device, type DeviceList } from "./device-list";
import type { Mesh } from "./mesh";
import type { PartitionSpec } from "./partition-spec";
import type { UnknownEntry } from "./unknown-entry";
import { ValueObject } from "./value-key";

/** Where an array lives, such as "pinned_host" or "unpinned_host"; null is the default, "device". */
export interface ShardingOptions {
  memoryKind?: string | null;
}

/** The memory kind JAX gives a sharding built without one. */
export const DEFAULT_MEMORY_KIND = "device";

/** JAX resolves no memory kind to "device", so the two are one sharding: both become null. */
function memoryKindOf(options: ShardingOptions): string | null {
  const kind = options.memoryKind ?? null;
  return kind === DEFAULT_MEMORY_KIND ? null : kind;
}

/** jax.sharding.NamedSharding: a mesh plus a PartitionSpec. */
export class NamedSharding extends ValueObject {
  readonly memoryKind: string | null;

  constructor(
    readonly mesh: Mesh,
    readonly spec: PartitionSpec,
    options: ShardingOptions = {},
  ) {
    super();
    this.memoryKind = memoryKindOf(options);
  }

  #headKey: string | undefined;

  /** The key of everything but the mesh; tables key shardings by it plus their mesh's entry. */
  get headKey(): string {
    this.#headKey ??= `${JSON.stringify(this.memoryKind)}|${this.spec.key}`;
    return this.#headKey;
  }

  protected computeKey(): string {
    return `NamedSharding(${this.mesh.key},${this.spec.key},${JSON.stringify(this.memoryKind)})`;
  }
}

/** jax.sharding.SingleDeviceSharding: the whole array on one device. */
export class SingleDeviceSharding extends ValueObject {
  readonly device: Device;
  readonly memoryKind: string | null;

  constructor(device: Device | number, options: ShardingOptions = {}) {
    super();
    this.device = typeof device === "number" ? new Device(device) : device;
    this.memoryKind = memoryKindOf(options);
  }

  protected computeKey(): string {
    return `SingleDeviceSharding(${this.device.id},${JSON.stringify(this.memoryKind)})`;
  }
}

/** The XLA OpSharding types a GSPMDSharding may have (tuple shardings are not carried). */
export type HloShardingType = "replicated" | "maximal" | "other" | "manual";

/** An XLA HloSharding: a tile assignment of logical device indices (positions in the device list). */
export interface HloSharding {
  type: HloShardingType;
  /** The tile assignment's shape; empty for replicated and manual. */
  tileDims?: readonly number[];
  /** The tile assignment's logical device indices, row-major. */
  tileDevices?: readonly number[];
  replicateOnLastTileDim?: boolean;
  lastTileDims?: readonly HloShardingType[];
}

/** GSPMDSharding: a device list plus an XLA HloSharding. */
export class GSPMDSharding extends ValueObject {
  readonly hloSharding: Readonly<Required<HloSharding>>;
  readonly memoryKind: string | null;

  constructor(
    readonly devices: DeviceList,
    hloSharding: HloSharding,
    options: ShardingOptions = {},
  ) {
    super();
    this.hloSharding = Object.freeze({
      type: hloSharding.type,
      tileDims: Object.freeze([...(hloSharding.tileDims ?? [])]),
      tileDevices: Object.freeze([...(hloSharding.tileDevices ?? [])]),
      replicateOnLastTileDim: hloSharding.replicateOnLastTileDim ?? false,
      lastTileDims: Object.freeze([...(hloSharding.lastTileDims ?? [])]),
    });
    this.memoryKind = memoryKindOf(options);
  }

  protected computeKey(): string {
    const h = this.hloSharding;
    const hlo = [h.type, h.tileDims, h.tileDevices, h.replicateOnLastTileDim, h.lastTileDims];
    return `GSPMDSharding(${this.devices.key},${JSON.stringify([hlo, this.memoryKind])})`;
  }
}

/** Any sharding a ShapeDtypeStruct may carry; UnknownEntry is one from a newer schema. */
export type Sharding = NamedSharding | SingleDeviceSharding | GSPMDSharding | UnknownEntry;
