/**
 * How two device orders differ, in the words a reader checks a mesh by: "devices 3 and 5
 * swapped", "iota [16, 64] to [64, 16] transposed". Python: diff/device_order.py.
 */
import { findIota, type Iota } from "../iota";
import { listText, thousands } from "./describe";
import type { DiffDetail, Json } from "./payload-diff";

/** The ids of the two sides, and the shape each is laid out in (a mesh's axis sizes), if any. */
export interface DeviceOrders {
  a: ArrayLike<number>;
  b: ArrayLike<number>;
  shapeA?: readonly number[];
  shapeB?: readonly number[];
}

/** The detail of two device orders under `field`, or undefined when they are equal. */
export function deviceOrderDetail(field: string, orders: DeviceOrders): DiffDetail | undefined {
  const { a, b } = orders;
  const n = a.length;
  if (n !== b.length) {
    const text = `${thousands(n)} devices to ${thousands(b.length)}`;
    return detail(field, orders, { kind: "count" }, text);
  }
  const moved: number[] = [];
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) moved.push(i);
  if (moved.length === 0) return undefined;
  // Ids in place on both sides are in both sets: only the moved ones can be in one alone.
  const movedA = moved.map((i) => a[i]);
  const movedB = moved.map((i) => b[i]);
  const inA = new Set(movedA);
  const inB = new Set(movedB);
  const removed = movedA.filter((id) => !inB.has(id));
  const added = movedB.filter((id) => !inA.has(id));
  if (removed.length || added.length) return setDetail(field, orders, removed, added);
  if (moved.length === 2) {
    const [p, q] = moved;
    const devices = [a[p], a[q]];
    const change = { kind: "swapped", devices, positions: moved };
    return detail(field, orders, change, `devices ${devices[0]} and ${devices[1]} swapped`);
  }
  const iotaA = iotaOf(a);
  const iotaB = iotaOf(b);
  if (iotaA && iotaB) {
    const text = `device order iota ${iotaText(iotaA, orders.shapeA)} to ${iotaText(iotaB, orders.shapeB)}`;
    return detail(field, orders, { kind: "iota" }, text);
  }
  const p = moved[0];
  const orderA = iotaA ? `iota ${iotaText(iotaA, orders.shapeA)}` : "an irregular order";
  const orderB = iotaB ? `iota ${iotaText(iotaB, orders.shapeB)}` : "an irregular order";
  const text =
    `device order ${orderA} to ${orderB}: ${thousands(moved.length)} of ${thousands(n)} positions differ ` +
    `(first ${p}: device ${a[p]} to ${b[p]})`;
  const change = { kind: "reordered", positions: moved.length, first: p };
  return detail(field, orders, change, text);
}

/** Devices on one side only: "devices 4, 5 removed, 12, 13 added". */
function setDetail(
  field: string,
  orders: DeviceOrders,
  removed: number[],
  added: number[],
): DiffDetail {
  const sorted = (ids: number[]) => [...ids].sort((x, y) => x - y);
  const out = sorted(removed);
  const into = sorted(added);
  const words = [
    ...(out.length
      ? [`${out.length === 1 ? "device" : "devices"} ${listText(out.map(String))} removed`]
      : []),
    ...(into.length
      ? [`${into.length === 1 ? "device" : "devices"} ${listText(into.map(String))} added`]
      : []),
  ];
  const change = {
    kind: "set",
    removed: out.slice(0, 8),
    added: into.slice(0, 8),
    removedCount: out.length,
    addedCount: into.length,
  };
  return detail(field, orders, change, words.join(", "));
}

function detail(field: string, orders: DeviceOrders, change: Json, text: string): DiffDetail {
  return { field, a: summary(orders.a), b: summary(orders.b), change, text };
}

/** A device order in the result: its count, and its iota form if it has one. */
function summary(ids: ArrayLike<number>): Json {
  const iota = iotaOf(ids);
  const form = iota && {
    reshapeDims: [...iota.reshapeDims],
    transposePerm: [...iota.transposePerm],
    offset: iota.offset,
  };
  return { count: ids.length, iota: form ?? null };
}

/** The ids' iota form, offset by their first id (an iota starts at 0), or undefined. */
function iotaOf(ids: ArrayLike<number>): (Iota & { offset: number }) | undefined {
  if (ids.length === 0) return undefined;
  const iota = findIota(ids, ids[0]);
  return iota && { ...iota, offset: ids[0] };
}

/**
 * An iota in words, by the shape it lays the ids out in: "[16, 64]" (in order, in a mesh of that
 * shape), "[64, 16] transposed" (arange(1024).reshape(16, 64).T), "[8, 4, 2] transposed
 * (2, 0, 1)", and "from 8" after an offset.
 */
function iotaText(iota: Iota & { offset: number }, shape?: readonly number[]): string {
  const { reshapeDims, transposePerm, offset } = iota;
  const identity = transposePerm.every((p, i) => p === i);
  const dims = identity ? (shape ?? reshapeDims) : transposePerm.map((p) => reshapeDims[p]);
  let text = `[${dims.join(", ")}]`;
  if (!identity) {
    const swapped = transposePerm.length === 2;
    text += swapped ? " transposed" : ` transposed (${transposePerm.join(", ")})`;
  }
  return offset ? `${text} from ${offset}` : text;
}
