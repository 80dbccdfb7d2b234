import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { WorkerClient, WorkerGroup } from "../../src/rpc";
import { groupCalls } from "../../test/support/group-programs";
import { answerApart, measureApart } from "./group-apart";
import { startJob } from "./group-job";
import {
  type CallCost,
  callCost,
  callsFor,
  costOnGroup,
  WARM_UP_MEMBER_CALLS,
} from "./group-timing";

/**
 * Real workers: one JAX job over jax.distributed (gloo on CPU) of 1 to 16
 * worker processes, each of one or two CPU devices, driven by one WorkerGroup: the time to form
 * the group (connect, negotiate a version, check the topology), and each call's time and the
 * controller's CPU, for the small program and a sharded array. Each job is measured from a
 * controller process of its own (measureRealApart).
 */

/** One job of real workers. */
export interface RealRow {
  workers: number;
  devicesPerWorker: number;
  formMs: number;
  small: CallCost;
  array: CallCost;
  /** Members that relayed the others' sessions (0: a session from the controller to each). */
  relays: number;
  /** When relayed: the small call over a session from the controller to each member. */
  direct?: CallCost;
  /**
   * When relayed: the relaying member's CPU per small call beyond the median other member's,
   * per member it carries (what forwarding costs a Python worker).
   */
  relayCpuMsPerMember?: number;
}

/** The job of one worker called with WorkerClient.executeSharded, no group in between. */
export interface DirectRow {
  devices: number;
  small: CallCost;
  array: CallCost;
}

/** Starts a job of `workers` × `devices`, forms the group, times its calls, and stops it. */
export async function measureReal(
  root: string,
  workers: number,
  devices: number,
  side: number,
  calls: { small: number; array: number },
  progress: (task: string) => void,
): Promise<{ row: RealRow; direct?: DirectRow }> {
  progress(`group: starting ${workers} workers of ${devices} CPU devices`);
  const job = await startJob(root, workers, devices);
  try {
    const start = performance.now();
    const group = await WorkerGroup.connect(job.targets, { deadlineMs: 600_000 });
    const formMs = performance.now() - start;
    try {
      const ids = group.topology.devices.map((d) => d.id);
      const { small, array } = groupCalls(ids, devices, side);
      progress(`group: calls over ${workers} workers of ${devices} devices`);
      // Warm up on at least 4,000 member calls, so that V8 has
      // compiled the call path (its compiler's threads count in this process's CPU), and time
      // at least 2,000.
      const warmUp = callsFor(workers, WARM_UP_MEMBER_CALLS, 3);
      const smallCalls = callsFor(workers, 2_000, calls.small);
      const before = job.pids.map(cpuMsOf);
      const smallCost = await callCost(
        () => group.executeSharded(small.program, small.inputs),
        smallCalls,
        warmUp,
      );
      const spent = job.pids.map((pid, i) => cpuMsOf(pid) - before[i]);
      const row: RealRow = {
        workers,
        devicesPerWorker: devices,
        formMs,
        small: smallCost,
        array: await callCost(() => group.executeSharded(array.program, array.inputs), calls.array),
        relays: group.relays,
      };
      if (group.relays === 1) {
        // The relay is member 0 (the first target, process 0), carrying every member.
        const others = spent.slice(1).sort((a, b) => a - b);
        const extra = spent[0] - others[others.length >> 1];
        row.relayCpuMsPerMember = extra / (warmUp + smallCost.calls) / workers;
      }
      if (group.relays > 0) {
        progress(`group: a session from the controller to each of ${workers} workers`);
        group.close();
        row.direct = await costOnGroup(
          job.targets,
          { deadlineMs: 600_000, relayFanout: 0 },
          (g) => g.executeSharded(small.program, small.inputs),
          smallCalls,
          warmUp,
        );
      }
      if (workers !== 1) return { row };
      // One worker alone, with no group: what the group costs on top.
      const client = await WorkerClient.connect(job.targets[0], { deadlineMs: 600_000 });
      try {
        const direct = {
          devices,
          small: await callCost(
            () => client.executeSharded(small.program, small.inputs),
            smallCalls,
            warmUp,
          ),
          array: await callCost(
            () => client.executeSharded(array.program, array.inputs),
            calls.array,
          ),
        };
        return { row, direct };
      } finally {
        client.close();
      }
    } finally {
      group.close();
    }
  } finally {
    await job.stop();
  }
}

/** A process's CPU so far (user and system), from /proc: in ticks of 10 ms (USER_HZ 100). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** measureReal in a controller process of its own (bench/group/group-apart.ts). */
export function measureRealApart(
  ...args: Parameters<typeof measureReal>
): ReturnType<typeof measureReal> {
  const [root, workers, devices, side, calls, progress] = args;
  const argv = [root, workers, devices, side, calls.small, calls.array];
  return measureApart(__filename, argv, progress);
}

if (require.main === module) {
  const [root, ...rest] = process.argv.slice(2);
  const [workers, devices, side, small, array] = rest.map(Number);
  answerApart((progress) => measureReal(root, workers, devices, side, { small, array }, progress));
}
