import { type Iota, materializeIota } from "../iota";
import { type Interned, ValueObject, WeakInterner } from "./value-key";

/** A device, known on the wire only by its global integer id. */
export class Device extends ValueObject {
  constructor(readonly id: number) {
    super();
  }

  protected computeKey(): string {
    return `Device(${this.id})`;
  }
}

/**
 * A device list's ids as lowering reads them: typed when every id is a device id (an integer in
 * [0, 2^31-1]), else the numbers as given, so lowering can say which one is wrong.
 */
export type DeviceIds = Int32Array | readonly number[];

/** ids = offset + the iota's elements: a device list read in iota form, not yet written out. */
export interface OffsetIota {
  readonly offset: number;
  readonly iota: Iota;
}

/** Equal device lists share one record, so a value key is short and lowering is cached by value. */
const INTERNED = new WeakInterner<DeviceIds>("", sameIds);

let internals: {
  ids(list: DeviceList): DeviceIds;
  interned(list: DeviceList): Interned<DeviceIds>;
  iota(list: DeviceList): OffsetIota | undefined;
  ofIds(ids: Int32Array): DeviceList;
  ofIota(form: OffsetIota, size: number): DeviceList;
};

/** An ordered list of devices by global id, like JAX's DeviceList. */
export class DeviceList extends ValueObject {
  // Held as a typed array (or an iota until asked); the public `ids` array is built on demand.
  #array: DeviceIds | undefined;
  #iota: OffsetIota | undefined;
  #size: number;
  #ids: readonly number[] | undefined;
  #interned: Interned<DeviceIds> | undefined;

  constructor(ids: Iterable<number | Device>) {
    super();
    const given: readonly (number | Device)[] = Array.isArray(ids) ? ids : Array.from(ids);
    const typed = new Int32Array(given.length);
    for (let i = 0; i < given.length; i++) {
      const d = given[i];
      const id = typeof d === "number" ? d : d.id;
      if (!(Number.isInteger(id) && id >= 0 && id <= 0x7fffffff)) {
        // Not a device id: kept as given, for lowering to refuse with its position.
        this.#ids = Object.freeze(given.map((x) => (typeof x === "number" ? x : x.id)));
        this.#array = this.#ids;
        break;
      }
      typed[i] = id;
    }
    this.#array ??= typed;
    this.#size = given.length;
  }

  static {
    internals = {
      ids: (list) => list.#idArray(),
      interned: (list) => {
        list.#interned ??= INTERNED.intern(list.#idArray(), hashIds(list.#idArray()));
        return list.#interned;
      },
      iota: (list) => (list.#array === undefined ? list.#iota : undefined),
      ofIds: (ids) => {
        const list = new DeviceList([]);
        list.#array = ids;
        list.#size = ids.length;
        return list;
      },
      ofIota: (form, size) => {
        const list = new DeviceList([]);
        list.#array = undefined;
        list.#iota = form;
        list.#size = size;
        return list;
      },
    };
  }

  /** The device ids, in order. */
  get ids(): readonly number[] {
    if (this.#ids === undefined) {
      const typed = this.#idArray();
      const ids = new Array<number>(typed.length);
      for (let i = 0; i < typed.length; i++) ids[i] = typed[i];
      this.#ids = Object.freeze(ids);
    }
    return this.#ids;
  }

  /** The number of devices. */
  get size(): number {
    return this.#size;
  }

  /** The devices, in order. */
  get devices(): Device[] {
    return this.ids.map((id) => new Device(id));
  }

  protected computeKey(): string {
    return `DeviceList(${this.#size};${internals.interned(this).token})`;
  }

  #idArray(): DeviceIds {
    if (this.#array === undefined) {
      const { iota, offset } = this.#iota as OffsetIota;
      this.#array = materializeIota(iota, offset);
    }
    return this.#array;
  }
}

/** The ids of a list, typed when valid; written out once if it was read as an iota. */
export function deviceIdsOf(list: DeviceList): DeviceIds {
  return internals.ids(list);
}

/** The record every list equal to this one shares, while any of them lives. */
export function internedIds(list: DeviceList): Interned<DeviceIds> {
  return internals.interned(list);
}

/** The iota a list was read as, if its ids are not written out yet. */
export function pendingIota(list: DeviceList): OffsetIota | undefined {
  return internals.iota(list);
}

/** A list over checked ids, which the caller hands over and never changes. */
export function deviceListOfIds(ids: Int32Array): DeviceList {
  return internals.ofIds(ids);
}

/** A list of offset + a checked iota of `size` elements, written out only when asked for. */
export function deviceListOfIota(form: OffsetIota, size: number): DeviceList {
  return internals.ofIota(form, size);
}

/** FNV-1a over the ids as 32-bit words, seeded with the count. */
function hashIds(ids: DeviceIds): number {
  let h = Math.imul(0x811c9dc5 ^ ids.length, 0x01000193);
  for (let i = 0; i < ids.length; i++) h = Math.imul(h ^ ids[i], 0x01000193);
  return h >>> 0;
}

function sameIds(a: DeviceIds, b: DeviceIds): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    // NaN equals NaN, as in the key it replaces ("NaN" === "NaN").
    if (x !== y && !(Number.isNaN(x) && Number.isNaN(y))) return false;
  }
  return true;
}
