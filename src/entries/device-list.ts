import {
  type Entry,
  type Iota,
  DeviceList as Message,
  type DeviceList as MessageType,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import { findIota, iotaSize } from "../iota";
import type { DecodeLimits } from "../limits";
import {
  type DeviceIds,
  type DeviceList,
  deviceListOfIds,
  deviceListOfIota,
  internedIds,
  type OffsetIota,
} from "../model/device-list";
import type { Interned } from "../model/value-key";
import { entryOrigin } from "../provenance";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import type { Accepts, Checked } from "../table/references";
import { bytesFieldSize, varintSize } from "../wire-sizes";
import { type Problem, refuse } from "./problem";

/** The largest device id the wire carries (JAX and IFRT ids are int32). */
export const MAX_DEVICE_ID = 0x7fffffff;

/** What checking a device list found: its size, and its ids written out or as an iota. */
export interface DeviceListFacts {
  readonly size: number;
  /** The ids, when the message lists them. */
  readonly ids?: Int32Array;
  /** The iota, when the message has one: lifting writes it out only when asked. */
  readonly iota?: OffsetIota;
}

/** A reference to a device list. */
export const DEVICE_LIST: Accepts<MessageType, DeviceListFacts> = {
  name: "DeviceList",
  accepts: (c): c is Checked<MessageType, DeviceListFacts> => c.kind === "deviceList",
};

/**
 * The smallest form of each device-list value lowered before, by its interned record: a record
 * lives while some equal list does, so this holds no list and drops what no list can ask for.
 */
const LOWERED = new WeakMap<Interned<DeviceIds>, MessageType>();

/** A device list's value: its interned token, short however many ids it has. */
export function key(list: DeviceList, _ctx: LowerContext): ValueKey {
  return [-1, internedIds(list).token];
}

/** A DeviceList entry, in its smallest form; once per value and process (see LOWERED). */
export function lower(list: DeviceList, ctx: LowerContext): Entry {
  const interned = internedIds(list);
  // An entry that will carry a newer peer's unknown fields is written to, so it is never shared.
  const shared = entryOrigin(list) === undefined;
  let message = shared ? LOWERED.get(interned) : undefined;
  if (!message) {
    refuse(ctx.path, deviceIdsProblem(interned.value));
    message = lowerDeviceIds(interned.value);
    if (shared) LOWERED.set(interned, message);
  }
  return { kind: { $case: "deviceList", value: message } };
}

/** Checks a device list message and returns its ids, sizing an iota before writing it out. */
export function check(message: MessageType, ctx: CheckContext): DeviceListFacts {
  const { path, limits } = ctx;
  const form = message.ids;
  switch (form?.$case) {
    case "iota": {
      const { offset, iota } = form.value;
      const iotaPath = `${path}.iota.iota`;
      if (!iota) throw new DecodeError(iotaPath, "missing", "an iota device list needs its iota");
      const size = checkIota(iota, iotaPath, limits);
      if (size > 0 && offset + size - 1 > MAX_DEVICE_ID) {
        throw new DecodeError(
          `${path}.iota.offset`,
          "invalid-value",
          `ids up to ${offset + size - 1} pass 2^31-1`,
        );
      }
      // Distinct and in range by construction.
      return { size, iota: { offset, iota } };
    }
    case "plain": {
      // The ids read ahead from the bytes, when they were (the message's list is then empty).
      const read = ctx.packedIds?.form === "plain" ? ctx.packedIds.values : form.value.ids;
      return checkListed(read, false, `${path}.plain.ids`, limits);
    }
    case "delta": {
      const read = ctx.packedIds?.form === "delta" ? ctx.packedIds.values : form.value.deltas;
      return checkListed(read, true, `${path}.delta.deltas`, limits);
    }
    default:
      throw new DecodeError(
        `${path}.ids`,
        "missing",
        "no known device id form (iota, plain or delta)",
      );
  }
}

/**
 * Checks listed ids (or deltas, summed) and returns them as an Int32Array: in range first,
 * then distinct, as deviceIdsProblem.
 */
function checkListed(
  values: Int32Array | readonly number[],
  summed: boolean,
  path: string,
  limits: DecodeLimits,
): DeviceListFacts {
  checkCount(values.length, path, limits);
  // The generated decoder's lists (uint32 ids, int32 deltas) keep their 32 bits as Int32. The
  // array is this decode's own (read ahead, or copied here), so the ids are written over it.
  const ids = values instanceof Int32Array ? values : Int32Array.from(values);
  const found = idsProblem(ids, summed);
  if (found) throw new DecodeError(`${path}${found.at ?? ""}`, found.code, found.detail);
  return { size: ids.length, ids };
}

/**
 * Checks listed ids in one pass over `values`, summing deltas in place when `summed`: a range
 * problem anywhere wins over a repeat, reported at the first position whose id appeared
 * before. Ids below `dense` (the usual case) are marked one bit each, a few far ones go to a
 * Set. Uint32 ids are held as their bits, so a negative one is past 2^31-1.
 */
function idsProblem(values: Int32Array, summed: boolean): Problem | undefined {
  const n = values.length;
  const dense = 8 * n + 64;
  const marks = new Uint8Array(dense >>> 3);
  let far: Set<number> | undefined;
  let repeat = -1; // the first position whose id appeared before
  let repeatedId = 0;
  for (let i = 0, id = 0; i < n; i++) {
    if (summed) {
      id += values[i]; // each sum is checked, so none strays far from the range
      if (id < 0 || id > MAX_DEVICE_ID) return outOfRange(id, i);
      values[i] = id;
    } else {
      id = values[i];
      if (id < 0) return outOfRange(id >>> 0, i);
    }
    if (repeat >= 0) continue;
    if (id < dense) {
      const bit = 1 << (id & 7);
      const m = marks[id >>> 3];
      if (m & bit) [repeat, repeatedId] = [i, id];
      marks[id >>> 3] = m | bit;
    } else {
      far ??= new Set();
      if (far.has(id)) [repeat, repeatedId] = [i, id];
      far.add(id);
    }
  }
  return repeat < 0 ? undefined : repeated(repeatedId, repeat);
}

function outOfRange(id: number, i: number): Problem {
  const detail = `device id ${id} at position ${i} is not in [0, 2^31-1]`;
  return { code: "invalid-value", detail, at: `[${i}]` };
}

function repeated(id: number, i: number): Problem {
  return { code: "duplicate-device", detail: `device id ${id} appears twice`, at: `[${i}]` };
}

/** A checked device list; an iota stays one until its ids are asked for. */
export function lift(_message: MessageType, ctx: LiftContext<DeviceListFacts>): DeviceList {
  const { size, ids, iota } = ctx.facts;
  return iota ? deviceListOfIota(iota, size) : deviceListOfIds(ids as Int32Array);
}

/**
 * Checks a device list's ids in one pass: a range problem anywhere wins over a repeat, and a
 * repeat is reported at the first position whose id appeared before; `at` is the index.
 */
export function deviceIdsProblem(values: ArrayLike<number>): Problem | undefined {
  const n = values.length;
  // Ids below `dense` (the usual case) are marked one bit each; a few far ones go to a Set.
  const dense = 8 * n + 64;
  const marks = new Uint8Array(dense >>> 3);
  let far: Set<number> | undefined;
  let repeat = -1; // the first position whose id appeared before
  let repeatedId = 0; // its id
  for (let i = 0; i < n; i++) {
    const id = values[i];
    if (!(id >= 0 && id <= MAX_DEVICE_ID && Number.isInteger(id))) return outOfRange(id, i);
    if (repeat >= 0) continue;
    if (id < dense) {
      const bit = 1 << (id & 7);
      if (marks[id >>> 3] & bit) [repeat, repeatedId] = [i, id];
      marks[id >>> 3] |= bit;
    } else {
      far ??= new Set();
      if (far.has(id)) [repeat, repeatedId] = [i, id];
      far.add(id);
    }
  }
  return repeat < 0 ? undefined : repeated(repeatedId, repeat);
}

/**
 * Writes device ids in the smallest of the iota, plain and delta forms (ties in that order),
 * so a regular order of a million devices costs a few bytes. The caller has checked the ids.
 */
export function lowerDeviceIds(ids: ArrayLike<number>): MessageType {
  const n = ids.length;
  if (n === 0) return { ids: { $case: "plain", value: { ids: [] } } };
  let offset = ids[0];
  for (let i = 1; i < n; i++) if (ids[i] < offset) offset = ids[i];
  const iota = findIota(ids, offset);
  let best: "iota" | "plain" | "delta" | undefined;
  let bestSize = Number.POSITIVE_INFINITY;
  let iotaMessage: MessageType | undefined;
  if (iota) {
    const layout = { reshapeDims: [...iota.reshapeDims], transposePerm: [...iota.transposePerm] };
    iotaMessage = { ids: { $case: "iota", value: { offset, iota: layout } } };
    bestSize = encodedSize(iotaMessage);
    // Plain and delta cost at least 4 bytes plus one per id, so a smaller iota wins outright.
    if (bestSize <= n + 4) return iotaMessage;
    best = "iota";
  }
  const { plain, delta } = listedSizes(ids);
  if (plain < bestSize) [best, bestSize] = ["plain", plain];
  if (delta < bestSize) best = "delta";
  if (best === "iota") return iotaMessage as MessageType;
  if (best === "plain") return { ids: { $case: "plain", value: { ids: Array.from(ids) } } };
  const deltas = new Array<number>(n);
  for (let i = 0, previous = 0; i < n; i++) {
    deltas[i] = ids[i] - previous;
    previous = ids[i];
  }
  return { ids: { $case: "delta", value: { deltas } } };
}

/**
 * The encoded sizes of a DeviceList message holding the ids in plain and in delta form, counted
 * in one pass without writing either: a packed field's tag and length, then its varints.
 */
export function listedSizes(ids: ArrayLike<number>): { plain: number; delta: number } {
  let plain = 0;
  let delta = 0;
  for (let i = 0, previous = 0; i < ids.length; i++) {
    const id = ids[i];
    const d = id - previous;
    previous = id;
    plain += varintSize(id);
    delta += varintSize(((d << 1) ^ (d >> 31)) >>> 0);
  }
  const wrapped = (packed: number) => {
    const field = bytesFieldSize(packed);
    return 1 + varintSize(field) + field;
  };
  return { plain: wrapped(plain), delta: wrapped(delta) };
}

/** The encoded size of a DeviceList message. */
function encodedSize(message: MessageType): number {
  return Message.encode(message).finish().length;
}

/** Checks an iota's dims and permutation and returns its size, which is within the limits. */
function checkIota(iota: Iota, path: string, limits: DecodeLimits): number {
  const size = checkIotaLayout(iota, path, limits);
  checkCount(size, `${path}.reshape_dims`, limits);
  return size;
}

/** Checks an iota's rank and permutation; returns its size, Infinity past 2^53. */
export function checkIotaLayout(iota: Iota, path: string, limits: DecodeLimits): number {
  const { reshapeDims, transposePerm } = iota;
  if (reshapeDims.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.reshape_dims`,
      "limit-exceeded",
      `${reshapeDims.length} dims pass the limit of ${limits.maxRank}`,
    );
  }
  if (transposePerm.length !== reshapeDims.length) {
    throw new DecodeError(
      `${path}.transpose_perm`,
      "invalid-iota",
      `${transposePerm.length} perm entries for ${reshapeDims.length} reshape dims`,
    );
  }
  const seen = new Set<number>();
  for (const p of transposePerm) {
    if (p >= transposePerm.length || seen.has(p)) {
      throw new DecodeError(
        `${path}.transpose_perm`,
        "invalid-iota",
        `[${transposePerm.join(", ")}] is not a permutation`,
      );
    }
    seen.add(p);
  }
  return iotaSize(reshapeDims);
}

function checkCount(count: number, path: string, limits: DecodeLimits): void {
  if (count > limits.maxDevicesPerList) {
    const shown = Number.isFinite(count) ? String(count) : "more than 2^53";
    throw new DecodeError(
      path,
      "limit-exceeded",
      `${shown} devices pass the limit of ${limits.maxDevicesPerList}`,
    );
  }
}
