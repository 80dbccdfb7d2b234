import { performance } from "node:perf_hooks";
import { WorkerClient } from "../../src/rpc";
import { mixedCall } from "../../test/support/soak-mix";
import { emptyTally, ended, summary } from "../../test/support/soak-tally";
import { keepCalling } from "./soak-lanes";
import { gcExposed, type MemorySample, sampleMemory } from "./soak-memory";
import type { PartContext } from "./soak-plan";
import type { MemoryFigure, SteadyResult } from "./soak-results";
import { memoryTrend } from "./soak-trend";
import { metricsUrlOf, startSoakWorker, workerHasFlag } from "./soak-worker";

/**
 * Part 1: 64 calls in flight for minutes against one worker with its default flags but
 * --max-concurrent-calls 64 (and --metrics-port 0 when it has the flag, to read its resident
 * size from there too), every answer checked; memory sampled every few seconds.
 */
export async function runSteady(context: PartContext): Promise<SteadyResult> {
  const { root, plan } = context;
  const metrics = workerHasFlag(root, "--metrics-port");
  const worker = await startSoakWorker(root, {
    maxConcurrentCalls: plan.inFlight,
    ...(metrics ? { metricsPort: 0 } : {}),
  });
  try {
    const metricsUrl = metrics ? await metricsUrlOf(worker) : undefined;
    const client = await WorkerClient.connect(worker.target, { deadlineMs: plan.hang.deadlineMs });
    try {
      const { seconds, sampleEveryS } = plan.steady;
      const maxCalls = seconds * plan.maxCallsPerSecond;
      const tally = emptyTally(); // read live by the sampler and the progress bar
      const sampler = sampleMemory(
        { pid: worker.process.pid as number, metricsUrl },
        sampleEveryS * 1000,
        () => ended(tally),
      );
      context.status(() => `1 steady: ${summary(tally)}`);
      const started = performance.now();
      const { endedBy } = await keepCalling({
        inFlight: plan.inFlight,
        untilMs: started + seconds * 1000,
        maxCalls,
        hang: plan.hang,
        tally,
        call: (n, signal) => mixedCall(client, n, { deadlineMs: plan.hang.deadlineMs, signal }),
      });
      const samples = await sampler.stop();
      const warmUpS = seconds * plan.steady.warmUpFraction;
      return {
        seconds: (performance.now() - started) / 1000,
        inFlight: plan.inFlight,
        hang: plan.hang,
        endedBy,
        maxCalls,
        tally,
        memory: {
          everyS: sampleEveryS,
          warmUpS,
          gcExposed: gcExposed(),
          ...(metricsUrl ? { metricsUrl } : {}),
          figures: memoryFigures(samples, warmUpS, metricsUrl !== undefined),
          samples,
        },
      };
    } finally {
      client.close();
    }
  } finally {
    await worker.stop();
  }
}

/** Each memory figure's trend after warm-up, and where it was read. */
function memoryFigures(samples: MemorySample[], warmUpS: number, metrics: boolean): MemoryFigure[] {
  const after = samples.filter((s) => s.atS >= warmUpS);
  const trend = (pick: (s: MemorySample) => number | undefined) =>
    memoryTrend(
      after.flatMap((s) => {
        const bytes = pick(s);
        return bytes === undefined ? [] : [{ calls: s.calls, bytes }];
      }),
    );
  const figures: MemoryFigure[] = [
    {
      name: "worker resident size",
      source: "VmRSS of /proc/PID/status",
      trend: trend((s) => s.workerRssProcBytes),
    },
  ];
  if (metrics) {
    figures.push({
      name: "worker resident size",
      source: "process_resident_memory_bytes of the worker's /metrics",
      trend: trend((s) => s.workerRssMetricsBytes),
    });
  }
  figures.push({
    name: "client heap in use",
    source: gcExposed()
      ? "process.memoryUsage().heapUsed after global.gc()"
      : "process.memoryUsage().heapUsed, no GC first (node ran without --expose-gc)",
    trend: trend((s) => s.clientHeapBytes),
  });
  return figures;
}
