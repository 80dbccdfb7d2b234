import type { JobDevice, Topology } from "./topology";

/**
 * Why workers are not one JAX job: `process-count` (their jobs have different process counts,
 * or not one process per worker), `process-index` (two workers are the same process),
 * `devices` (they list different global devices).
 */
export class GroupTopologyError extends Error {
  override readonly name = "GroupTopologyError";

  constructor(
    readonly kind: "process-count" | "process-index" | "devices",
    message: string,
  ) {
    super(message);
  }
}

/** The job the members of a group form: its devices, and each process's devices. */
export interface GroupTopology {
  processCount: number;
  /** Every global device, in jax.devices() order. */
  devices: JobDevice[];
  /** Each process's devices, by process index. */
  byProcess: JobDevice[][];
}

/**
 * Checks that the workers (each with its GetTopology answer) are one job, every process
 * exactly once: the same process count, as many workers as processes, each process index
 * once, and the same global devices, each on the same process. Throws GroupTopologyError.
 */
export function checkOneJob(
  members: readonly { target: string; topology: Topology }[],
): GroupTopology {
  const [first, ...rest] = members;
  if (first === undefined) throw new RangeError("a worker group needs at least one worker");
  const count = first.topology.processCount;
  for (const m of rest) {
    if (m.topology.processCount !== count) {
      throw new GroupTopologyError(
        "process-count",
        `${first.target} is in a job of ${count} processes, ${m.target} in one of ${m.topology.processCount}: they are not one job`,
      );
    }
  }
  if (members.length !== count) {
    throw new GroupTopologyError(
      "process-count",
      `${members.length} workers, but their job has ${count === 1 ? "1 process" : `${count} processes`}: give one worker per process`,
    );
  }
  const byIndex = new Map<number, string>();
  for (const m of members) {
    const other = byIndex.get(m.topology.processIndex);
    if (other !== undefined) {
      throw new GroupTopologyError(
        "process-index",
        `${other} and ${m.target} are both process ${m.topology.processIndex}: they are not one job`,
      );
    }
    byIndex.set(m.topology.processIndex, m.target);
  }
  const devices = first.topology.devices;
  const want = devices.map(deviceKey).join(" ");
  for (const m of rest) {
    if (m.topology.devices.map(deviceKey).join(" ") !== want) {
      throw new GroupTopologyError(
        "devices",
        `${first.target} and ${m.target} list different global devices (${describeDevices(devices)} against ${describeDevices(m.topology.devices)}): they are not one job`,
      );
    }
  }
  const byProcess = Array.from({ length: count }, (_, p) =>
    devices.filter((d) => d.processIndex === p),
  );
  return { processCount: count, devices, byProcess };
}

/** A device's id and process, as the members must agree on them. */
function deviceKey(device: JobDevice): string {
  return `${device.id}@${device.processIndex}`;
}

/** "8 devices, ids 0–3, 2048–2051": a device set in a line. */
export function describeDevices(devices: readonly JobDevice[]): string {
  const ids = devices.map((d) => d.id);
  const runs: string[] = [];
  for (let i = 0; i < ids.length; ) {
    let j = i;
    while (j + 1 < ids.length && ids[j + 1] === ids[j] + 1) j++;
    runs.push(j > i ? `${ids[i]}–${ids[j]}` : String(ids[i]));
    i = j + 1;
  }
  return `${ids.length} devices, ids ${runs.join(", ")}`;
}
