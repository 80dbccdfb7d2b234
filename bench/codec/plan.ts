import { readFileSync } from "node:fs";
import {
  type Case,
  deviceCount,
  INLINED_MAX_DEVICES,
  INLINED_MAX_IDS,
} from "../../test/support/scenarios";
import { formatCount } from "../common/format";
import type { PythonSide } from "./python";
import type { SideId } from "./results";
import { TS_SIDES } from "./typescript-side";

/** The cases of one device count: JAX needs a process per device count, so they run together. */
export interface Group {
  devices: number;
  cases: Case[];
  /** Why JAX cannot run at this device count, if it cannot. */
  jaxSkipped?: string;
}

/** 16,384 CPU devices took 9 to 35 s to start here (35 s under load); 32,768 cannot start at all. */
export const DEFAULT_MAX_JAX_DEVICES = 16_384;

/** Groups cases by device count, smallest first, and decides where JAX is skipped and why. */
export function planGroups(cases: readonly Case[], maxJaxDevices: number): Group[] {
  const pidMax = readPidMax();
  const byDevices = new Map<number, Case[]>();
  for (const c of cases)
    byDevices.set(deviceCount(c), [...(byDevices.get(deviceCount(c)) ?? []), c]);
  return [...byDevices]
    .sort(([x], [y]) => x - y)
    .map(([devices, group]) => ({
      devices,
      cases: group,
      jaxSkipped: jaxSkipReason(devices, maxJaxDevices, pidMax),
    }));
}

function jaxSkipReason(devices: number, maxJaxDevices: number, pidMax: number): string | undefined {
  if (devices >= pidMax) {
    return (
      `JAX on CPU cannot start ${formatCount(devices)} devices on this machine: its CPU client starts ` +
      `at least one thread per device (see the startup table) and kernel.pid_max is ${formatCount(pidMax)}; ` +
      "32,768 devices were tried and aborted in pthread_create after 200 s"
    );
  }
  if (devices > maxJaxDevices) {
    return `above --max-jax-devices ${formatCount(maxJaxDevices)}: JAX's CPU-device startup time grows faster than linearly (see the startup table)`;
  }
  return undefined;
}

/** The sides to run for a case, and why the others are skipped. */
export function sidesOf(c: Case, group: Group) {
  const skipped: Partial<Record<SideId, string>> = {};
  const inlinedReason = c.freshShardings
    ? "(d) inlines every shared object, so a fresh sharding per leaf changes nothing for it: it runs on S3's shared shardings"
    : deviceCount(c) > INLINED_MAX_DEVICES
      ? `(d) writes one device list per leaf: ${formatCount(c.leafCount * deviceCount(c))} device ids, and S3 runs it up to ${formatCount(INLINED_MAX_DEVICES)} devices (at 65,536, (d1) is 18 MB a run; it is linear in devices by construction)`
      : `(d) writes one device list per leaf: ${formatCount(c.leafCount)} × ${formatCount(deviceCount(c))} = ${formatCount(c.leafCount * deviceCount(c))} device ids, above the cap of ${formatCount(INLINED_MAX_IDS)} (at S2's 41M ids, (d1) is 82 MB and (d2) 334 MB, and each takes 6 to 9 s per run; (d) is linear in leaves by construction)`;
  const ts = TS_SIDES.filter((s) => c.inlined || s !== "d1");
  if (!c.inlined) skipped.d1 = inlinedReason;
  const pythonAll: PythonSide[] = c.inlined ? ["b", "c", "d2"] : ["b", "c"];
  if (!c.inlined) skipped.d2 = inlinedReason;
  let python = pythonAll;
  if (group.jaxSkipped) {
    for (const s of pythonAll) skipped[s] = group.jaxSkipped;
    python = [];
  }
  return { ts, python, skipped };
}

/** kernel.pid_max bounds the threads of the whole machine; Infinity where it cannot be read. */
function readPidMax(): number {
  try {
    return (
      Number(readFileSync("/proc/sys/kernel/pid_max", "utf8").trim()) || Number.POSITIVE_INFINITY
    );
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
