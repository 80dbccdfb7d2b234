import {
  type Entry,
  type Iota,
  DeviceList as Message,
  type DeviceList as MessageType,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import { findIota, iotaSize, materializeIota } from "../iota";
import type { DecodeLimits } from "../limits";
import { DeviceList } from "../model/device-list";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import type { Accepts, Checked } from "../table/references";
import { type Problem, refuse } from "./problem";

/** The largest device id the wire carries (JAX and IFRT ids are int32). */
export const MAX_DEVICE_ID = 0x7fffffff;

/** What checking a device list found: its ids, written out. */
export interface DeviceListFacts {
  readonly ids: number[];
}

/** A reference to a device list. */
export const DEVICE_LIST: Accepts<MessageType, DeviceListFacts> = {
  name: "DeviceList",
  accepts: (c): c is Checked<MessageType, DeviceListFacts> => c.kind === "deviceList",
};

/** A device list's value: its ids. */
export function key(list: DeviceList, _ctx: LowerContext): ValueKey {
  return [-1, list.ids.join(",")];
}

/** A DeviceList entry, in its smallest form. */
export function lower(list: DeviceList, ctx: LowerContext): Entry {
  refuse(ctx.path, deviceIdsProblem(list.ids));
  return { kind: { $case: "deviceList", value: lowerDeviceIds(list.ids) } };
}

/** Checks a device list message and returns its ids, sizing an iota before writing it out. */
export function check(message: MessageType, ctx: CheckContext): DeviceListFacts {
  const { path, limits } = ctx;
  const form = message.ids;
  let ids: ArrayLike<number>;
  let idsPath: string;
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
      return { ids: Array.from(materializeIota(iota, offset)) };
    }
    case "plain":
      ids = form.value.ids;
      idsPath = `${path}.plain.ids`;
      checkCount(ids.length, idsPath, limits);
      break;
    case "delta": {
      const { deltas } = form.value;
      idsPath = `${path}.delta.deltas`;
      checkCount(deltas.length, idsPath, limits);
      const sums = new Array<number>(deltas.length);
      for (let i = 0, id = 0; i < deltas.length; i++) sums[i] = id += deltas[i];
      ids = sums;
      break;
    }
    default:
      throw new DecodeError(
        `${path}.ids`,
        "missing",
        "no known device id form (iota, plain or delta)",
      );
  }
  const problem = deviceIdsProblem(ids);
  if (problem) throw new DecodeError(`${idsPath}${problem.at ?? ""}`, problem.code, problem.detail);
  return { ids: Array.from(ids) };
}

/** A checked device list. */
export function lift(_message: MessageType, ctx: LiftContext<DeviceListFacts>): DeviceList {
  return new DeviceList(ctx.facts.ids);
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

/**
 * Writes device ids in the smallest of the iota, plain and delta forms (ties in that order),
 * so a regular order of a million devices costs a few bytes.
 */
export function lowerDeviceIds(ids: readonly number[]): MessageType {
  const plain: MessageType = { ids: { $case: "plain", value: { ids: [...ids] } } };
  if (ids.length === 0) return plain;
  let offset = ids[0];
  for (const id of ids) if (id < offset) offset = id;
  const iota = findIota(ids.map((id) => id - offset));
  const candidates: MessageType[] = [];
  if (iota) {
    const layout = { reshapeDims: [...iota.reshapeDims], transposePerm: [...iota.transposePerm] };
    const best: MessageType = { ids: { $case: "iota", value: { offset, iota: layout } } };
    // Plain and delta cost at least 4 bytes plus one per id, so a smaller iota wins outright.
    if (encodedSize(best) <= ids.length + 4) return best;
    candidates.push(best);
  }
  const deltas = ids.map((id, i) => id - (i > 0 ? ids[i - 1] : 0));
  candidates.push(plain, { ids: { $case: "delta", value: { deltas } } });
  let best = candidates[0];
  let bestSize = encodedSize(best);
  for (const candidate of candidates.slice(1)) {
    const size = encodedSize(candidate);
    if (size < bestSize) [best, bestSize] = [candidate, size];
  }
  return best;
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
