import { performance } from "node:perf_hooks";

/** What a call costs, over a number of calls made one at a time after a warm-up. */
export interface CallCost {
  calls: number;
  /** Median wall time per call. */
  p50Ms: number;
  /** This process's CPU (user and system, every thread) per call, averaged over the calls. */
  cpuMs: number;
}

/**
 * Times `call` `calls` times, one at a time, after `warmUp` untimed calls (the program loaded
 * everywhere, the channels and the JIT warm): the median wall time, and the controller's own
 * CPU per call.
 */
export async function callCost(
  call: () => Promise<unknown>,
  calls: number,
  warmUp = 3,
): Promise<CallCost> {
  for (let i = 0; i < warmUp; i++) await call();
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return {
    calls,
    p50Ms: times[Math.floor(times.length / 2)],
    cpuMs: (used.user + used.system) / 1000 / calls,
  };
}
