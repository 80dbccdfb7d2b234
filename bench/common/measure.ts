/**
 * Timing: the median of repeated runs after a warm-up. jax_bench.py applies the same policy,
 * so the two languages' numbers are comparable.
 */

export interface Policy {
  /**
   * Warm-up runs until warmupRuns or warmupMs is reached, at least one. V8 compiles what runs once
   * per call (the encoder's pipeline, the generated encoders) only after hundreds of calls: S5's
   * encode took 242 µs a call over the first 300 calls, 61 after 500 more, 32 after 1,000, 27
   * from 2,000 on.
   */
  warmupRuns: number;
  warmupMs: number;
  /** Timed runs: at least minRuns, then more while within budgetMs, at most maxRuns. */
  minRuns: number;
  maxRuns: number;
  budgetMs: number;
}

export const DEFAULT_POLICY: Policy = {
  warmupRuns: 2_000,
  warmupMs: 300,
  minRuns: 3,
  maxRuns: 30,
  budgetMs: 500,
};

export interface Timing {
  medianMs: number;
  runs: number;
}

/** Times fn and returns the result of its first (warm-up) run alongside the timing. */
export function measure<T>(
  fn: () => T,
  policy: Policy = DEFAULT_POLICY,
): { result: T; timing: Timing } {
  const start = performance.now();
  const result = fn();
  for (let i = 1; i < policy.warmupRuns && performance.now() - start < policy.warmupMs; i++) fn();
  const samples: number[] = [];
  const timedStart = performance.now();
  while (
    samples.length < policy.minRuns ||
    (samples.length < policy.maxRuns && performance.now() - timedStart < policy.budgetMs)
  ) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  return { result, timing: { medianMs: median(samples), runs: samples.length } };
}

/**
 * Times fn on a new input from setup every run; setup is not timed. The warm-up and budget
 * count setup too, so a slow setup cannot stretch the run.
 */
export function measureCold<S>(
  setup: () => S,
  fn: (input: S) => unknown,
  policy: Policy = DEFAULT_POLICY,
): Timing {
  const start = performance.now();
  for (let i = 0; i < policy.warmupRuns && performance.now() - start < policy.warmupMs; i++)
    fn(setup());
  const samples: number[] = [];
  const timedStart = performance.now();
  while (
    samples.length < policy.minRuns ||
    (samples.length < policy.maxRuns && performance.now() - timedStart < policy.budgetMs)
  ) {
    const input = setup();
    const t0 = performance.now();
    fn(input);
    samples.push(performance.now() - t0);
  }
  return { medianMs: median(samples), runs: samples.length };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
