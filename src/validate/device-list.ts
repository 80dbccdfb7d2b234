import type { DeviceList as DeviceListMsg, Iota } from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import { iotaSize, materializeIota } from "../iota";
import type { DecodeLimits } from "../limits";
import { deviceIdsProblem, MAX_DEVICE_ID } from "./rules";

/** Checks a device list message and returns its ids, sizing an iota before writing it out. */
export function checkDeviceList(
  message: DeviceListMsg,
  path: string,
  limits: DecodeLimits,
): number[] {
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
      return Array.from(materializeIota(iota, offset));
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
  return Array.from(ids);
}

/** Checks an iota's dims and permutation and returns its size, which is within the limits. */
export function checkIota(iota: Iota, path: string, limits: DecodeLimits): number {
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
