import { DecodeError } from "../../errors";
import {
  checkProcessIndex,
  type JobDevice,
  type Topology,
  topologyOfBytes,
} from "../client/topology";
import { readTopologyBytes } from "../messages/topology-response";

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
    if (m.topology.devices === devices) continue; // one list, read once (checkOneJobBytes)
    if (m.topology.devices.map(deviceKey).join(" ") !== want) {
      throw new GroupTopologyError(
        "devices",
        `${first.target} and ${m.target} list different global devices (${describeDevices(devices)} against ${describeDevices(m.topology.devices)}): they are not one job`,
      );
    }
  }
  const byProcess = Array.from({ length: count }, (): JobDevice[] => []);
  for (const d of devices) byProcess[d.processIndex].push(d);
  return { processCount: count, devices, byProcess };
}

/**
 * checkOneJob over the members' GetTopology answers as bytes (WorkerClient.getTopologyBytes),
 * at a cost that grows with the members plus the devices, not their product: every member of
 * a job lists the same devices, so the first member's answer is decoded and checked, and each
 * other's devices are compared with it byte for byte. Only when some member's bytes differ is
 * each answer decoded and compared device by device, to name what differs. Returns the job,
 * and each member's process index; throws GroupTopologyError, or DecodeError for an answer
 * that is not a valid topology.
 */
export function checkOneJobBytes(answers: readonly { target: string; bytes: Uint8Array }[]): {
  job: GroupTopology;
  processIndex: number[];
} {
  const read = answers.map((a) => readTopologyBytes(a.bytes));
  const [first] = read;
  if (first === undefined) throw new RangeError("a worker group needs at least one worker");
  const want = first.devices;
  const same = (devices: Uint8Array | undefined) =>
    devices !== undefined && want !== undefined && Buffer.compare(devices, want) === 0;
  let members: { target: string; topology: Topology }[];
  if (read.every((r) => same(r.devices))) {
    const devices = topologyOfBytes(answers[0].bytes).devices;
    members = answers.map((a, i) => {
      const { processCount, processIndex } = read[i];
      checkProcessIndex(processCount, processIndex);
      return { target: a.target, topology: { processCount, processIndex, devices } };
    });
  } else {
    members = answers.map((a) => ({ target: a.target, topology: topologyOfBytes(a.bytes) }));
  }
  const job = checkOneJob(members);
  members.forEach((m, i) => {
    const p = m.topology.processIndex;
    if (job.byProcess[p].length === 0) {
      const detail = `no device of the worker's own process ${p}`;
      throw new DecodeError(`devices (${answers[i].target})`, "invalid-value", detail);
    }
  });
  return { job, processIndex: members.map((m) => m.topology.processIndex) };
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
