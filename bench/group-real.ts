import { performance } from "node:perf_hooks";
import { WorkerClient, WorkerGroup } from "../src/rpc";
import { startJob } from "./group-job";
import { groupCalls } from "./group-programs";
import { type CallCost, callCost } from "./group-timing";

/**
 * Real workers (issue 31 item 1): one JAX job over jax.distributed (gloo on CPU) of 1 to 16
 * worker processes, each of one or two CPU devices, driven by one WorkerGroup: the time to form
 * the group (connect, negotiate a version, check the topology), and each call's time and the
 * controller's CPU, for the small program and a sharded array.
 */

/** One job of real workers. */
export interface RealRow {
  workers: number;
  devicesPerWorker: number;
  formMs: number;
  small: CallCost;
  array: CallCost;
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
      const row = {
        workers,
        devicesPerWorker: devices,
        formMs,
        small: await callCost(() => group.executeSharded(small.program, small.inputs), calls.small),
        array: await callCost(() => group.executeSharded(array.program, array.inputs), calls.array),
      };
      if (workers !== 1) return { row };
      // One worker alone, with no group: what the group costs on top.
      const client = await WorkerClient.connect(job.targets[0], { deadlineMs: 600_000 });
      try {
        const direct = {
          devices,
          small: await callCost(
            () => client.executeSharded(small.program, small.inputs),
            calls.small,
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
