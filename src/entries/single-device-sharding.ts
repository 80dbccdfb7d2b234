import type { Entry, SingleDeviceSharding as MessageType } from "../../gen/ts/colocated/v1/table";
import { SingleDeviceSharding } from "../model/sharding";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import { deviceIdsProblem } from "./device-list";
import { checkMemoryKind } from "./memory-kind";
import { raise, refuse } from "./problem";

/** A SingleDeviceSharding's value: its device and memory kind. */
export function key(sharding: SingleDeviceSharding, _ctx: LowerContext): ValueKey {
  return [-1, `${sharding.device.id}|${JSON.stringify(sharding.memoryKind)}`];
}

/** A SingleDeviceSharding entry. */
export function lower(sharding: SingleDeviceSharding, ctx: LowerContext): Entry {
  const deviceId = sharding.device.id;
  refuse(ctx.path, deviceIdsProblem([deviceId]));
  const memoryKind = sharding.memoryKind ?? undefined;
  return { kind: { $case: "singleDeviceSharding", value: { deviceId, memoryKind } } };
}

/** Checks a SingleDeviceSharding message: its device id, then its memory kind. */
export function check(message: MessageType, ctx: CheckContext): undefined {
  const problem = deviceIdsProblem([message.deviceId]);
  // The id is the field itself, not a list: no index in the path.
  raise(`${ctx.path}.device_id`, problem && { ...problem, at: undefined });
  checkMemoryKind(message.memoryKind, ctx.path);
  return undefined;
}

/** A checked SingleDeviceSharding. */
export function lift(message: MessageType, _ctx: LiftContext): SingleDeviceSharding {
  return new SingleDeviceSharding(message.deviceId, { memoryKind: message.memoryKind ?? null });
}
