import { Entry } from "../../gen/ts/colocated/v1/table";
import { EncodeError } from "../errors";
import { DeviceList } from "../model/device-list";
import { Mesh } from "../model/mesh";
import type { SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { GSPMDSharding, NamedSharding, SingleDeviceSharding } from "../model/sharding";
import { UnknownEntry } from "../model/unknown-entry";
import { entryOrigin } from "../provenance";
import { graftUnknownFields } from "../unknown-fields";
import {
  arraySpecEntry,
  deviceListEntry,
  gspmdShardingEntry,
  meshEntry,
  namedShardingEntry,
  singleDeviceShardingEntry,
} from "./entries";

/**
 * Collects the shared objects of one payload into table entries, each equal value once.
 * An object is appended after its dependencies (post-order), so entries only refer backwards;
 * the first encounter fixes its index, which makes the table order canonical.
 *
 * Values are keyed by their own fields plus the indices of what they refer to, so a key stays
 * short however large the mesh below it; a new value is checked and lowered once.
 */
export class TableBuilder {
  /** The entries, in index order. */
  readonly entries: Entry[] = [];
  /** The model object each entry was lowered from. */
  readonly objects: SharedObject[] = [];
  // Buckets: ArraySpecs by their sharding's index (-1 for none), other kinds by a letter.
  readonly #byValue = new Map<number | string, Map<string, number>>();
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
    if (object instanceof ShapeDtypeStruct) {
      const sharding = object.sharding ? this.add(object.sharding, `${path}.sharding`) : undefined;
      const lower = () => arraySpecEntry(object, sharding, path);
      return this.#intern(object, sharding ?? -1, object.headKey, lower);
    }
    if (object instanceof NamedSharding) {
      const mesh = this.add(object.mesh, `${path}.mesh`);
      const key = `${mesh}|${JSON.stringify(object.memoryKind)}|${object.spec.key}`;
      return this.#intern(object, "N", key, () => namedShardingEntry(object, mesh, path));
    }
    if (object instanceof Mesh) {
      const list = this.add(object.devices, `${path}.devices`);
      const key = `${list}|${JSON.stringify([object.axisSizes, object.axisNames, object.axisTypes])}`;
      return this.#intern(object, "M", key, () => meshEntry(object, list, path));
    }
    if (object instanceof DeviceList) {
      return this.#intern(object, "D", object.ids.join(","), () => deviceListEntry(object, path));
    }
    if (object instanceof SingleDeviceSharding) {
      const key = `${object.device.id}|${JSON.stringify(object.memoryKind)}`;
      return this.#intern(object, "S", key, () => singleDeviceShardingEntry(object, path));
    }
    if (object instanceof GSPMDSharding) {
      const list = this.add(object.devices, `${path}.devices`);
      const key = `${list}|${JSON.stringify([object.hloSharding, object.memoryKind])}`;
      return this.#intern(object, "G", key, () => gspmdShardingEntry(object, list, path));
    }
    if (object instanceof UnknownEntry) {
      return this.#intern(object, "U", object.key, () => Entry.decode(object.bytes));
    }
    const name = (object as object)?.constructor?.name ?? typeof object;
    throw new EncodeError(path, `${name} is not a shared object`);
  }

  #intern(object: SharedObject, bucket: number | string, key: string, lower: () => Entry): number {
    let byKey = this.#byValue.get(bucket);
    if (!byKey) {
      byKey = new Map();
      this.#byValue.set(bucket, byKey);
    }
    const found = byKey.get(key);
    if (found !== undefined) return found;
    const entry = lower();
    const origin = entryOrigin(object);
    if (origin) graftUnknownFields(origin, entry);
    const index = this.entries.length;
    this.entries.push(entry);
    this.objects.push(object);
    byKey.set(key, index);
    return index;
  }
}
