import { DeviceList as DeviceListMsg } from "../../gen/ts/colocated/v1/table";
import { findIota } from "../iota";

/**
 * Writes device ids in the smallest of the iota, plain and delta forms (ties in that order),
 * so a regular order of a million devices costs a few bytes.
 */
export function lowerDeviceIds(ids: readonly number[]): DeviceListMsg {
  const plain: DeviceListMsg = { ids: { $case: "plain", value: { ids: [...ids] } } };
  if (ids.length === 0) return plain;
  let offset = ids[0];
  for (const id of ids) if (id < offset) offset = id;
  const iota = findIota(ids.map((id) => id - offset));
  const candidates: DeviceListMsg[] = [];
  if (iota) {
    const layout = { reshapeDims: [...iota.reshapeDims], transposePerm: [...iota.transposePerm] };
    const best: DeviceListMsg = { ids: { $case: "iota", value: { offset, iota: layout } } };
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
function encodedSize(message: DeviceListMsg): number {
  return DeviceListMsg.encode(message).finish().length;
}
