import { performance } from "node:perf_hooks";
import { type GroupOptions, WorkerGroup } from "../../src/rpc";

/** What a call costs, over a number of calls made one at a time after a warm-up. */
export interface CallCost {
  calls: number;
  /** Median wall time per call. */
  p50Ms: number;
  /**
   * This process's CPU (user and system, every thread) per call: the median of five batches'
   * averages, so that another process's burst on this shared machine moves one batch, not
   * the figure.
   */
  cpuMs: number;
}

/** Member calls a group warms up on before it is timed: enough that V8 has compiled the per-member path. */
export const WARM_UP_MEMBER_CALLS = 4_000;

/**
 * Member calls the controller warms up on before its small call over fixed-answer members is
 * timed: enough that V8 has also optimized the per-call path, which a small group runs once
 * per handful of member calls (16 members reach their steady CPU after about 2,000 calls).
 */
export const WARM_UP_SMALL_MEMBER_CALLS = 32_000;

/** How many group calls make `memberCalls` member calls over `members`, and at least `least`. */
export function callsFor(members: number, memberCalls: number, least: number): number {
  return Math.max(least, Math.ceil(memberCalls / members));
}

/** How many batches a run's CPU is measured in. */
const BATCHES = 5;

/**
 * Times `call` `calls` times, one at a time, after `warmUp` untimed calls (the program loaded
 * everywhere, the channels and the JIT warm): the median wall time, and the controller's own
 * CPU per call (the median batch's).
 */
export async function callCost(
  call: () => Promise<unknown>,
  calls: number,
  warmUp = 3,
): Promise<CallCost> {
  for (let i = 0; i < warmUp; i++) await call();
  const times: number[] = [];
  const batches: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    const size = Math.ceil(((b + 1) * calls) / BATCHES) - Math.ceil((b * calls) / BATCHES);
    if (size === 0) continue;
    const cpu = process.cpuUsage();
    for (let i = 0; i < size; i++) {
      const start = performance.now();
      await call();
      times.push(performance.now() - start);
    }
    const used = process.cpuUsage(cpu);
    batches.push((used.user + used.system) / 1000 / size);
  }
  times.sort((a, b) => a - b);
  batches.sort((a, b) => a - b);
  return {
    calls,
    p50Ms: times[Math.floor(times.length / 2)],
    cpuMs: batches[Math.floor(batches.length / 2)],
  };
}

/**
 * What a group call costs on a group of `targets` formed with `options` for the measurement
 * alone (closed after it): callCost of `call` on it.
 */
export async function costOnGroup(
  targets: readonly string[],
  options: GroupOptions,
  call: (group: WorkerGroup) => Promise<unknown>,
  calls: number,
  warmUp: number,
): Promise<CallCost> {
  const group = await WorkerGroup.connect(targets, options);
  try {
    return await callCost(() => call(group), calls, warmUp);
  } finally {
    group.close();
  }
}
