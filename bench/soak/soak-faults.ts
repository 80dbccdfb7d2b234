import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { WorkerClient } from "../../src/rpc";
import { mixedCall } from "../../test/support/soak-mix";
import { emptyTally, summary } from "../../test/support/soak-tally";
import { keepCalling } from "./soak-lanes";
import type { PartContext } from "./soak-plan";
import { faultyProxy } from "./soak-proxy";
import type { FaultsResult } from "./soak-results";
import { startSoakWorker } from "./soak-worker";

/** Connecting through the proxy may meet a fault too: this many tries, a second apart. */
const CONNECT_ATTEMPTS = 10;

/**
 * Part 3: part 1's calls through a proxy that cuts connections and stalls reads at random, by
 * a seeded plan (bench/soak/soak-proxy.ts). Every call must end, with an answer or a status.
 */
export async function runFaults(context: PartContext): Promise<FaultsResult> {
  const { root, plan, seed } = context;
  const { seconds, hang } = plan.faults;
  const worker = await startSoakWorker(root, { maxConcurrentCalls: plan.inFlight });
  const faults = { seed, ...plan.faults.proxy };
  const proxy = await faultyProxy(worker.target, faults);
  try {
    const { client, attempts } = await connectThrough(proxy.address, hang.deadlineMs);
    try {
      const tally = emptyTally();
      const maxCalls = seconds * plan.maxCallsPerSecond;
      const c = proxy.counts;
      context.status(
        () => `3 faults (${c.closed + c.reset} cuts, ${c.stalls} stalls): ${summary(tally)}`,
      );
      const started = performance.now();
      const { endedBy } = await keepCalling({
        inFlight: plan.inFlight,
        untilMs: started + seconds * 1000,
        maxCalls,
        hang,
        tally,
        call: (n, signal) => mixedCall(client, n, { deadlineMs: hang.deadlineMs, signal }),
      });
      return {
        seconds: (performance.now() - started) / 1000,
        inFlight: plan.inFlight,
        hang,
        endedBy,
        maxCalls,
        tally,
        plan: faults,
        proxy: { ...proxy.counts },
        connectAttempts: attempts,
      };
    } finally {
      client.close();
    }
  } finally {
    await proxy.close();
    await worker.stop();
  }
}

/** Connects through the proxy, trying again when a fault breaks the handshake. */
async function connectThrough(
  address: string,
  deadlineMs: number,
): Promise<{ client: WorkerClient; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { client: await WorkerClient.connect(address, { deadlineMs }), attempts: attempt };
    } catch (error) {
      if (attempt >= CONNECT_ATTEMPTS) throw error;
      await sleep(1_000);
    }
  }
}
