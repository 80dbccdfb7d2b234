/**
 * How a memory figure moved after warm-up: a least-squares line against calls ended, so that
 * one noisy sample (a GC that came late, a page the allocator kept) does not decide the growth.
 */

/** One figure's trend after warm-up. */
export interface MemoryTrend {
  /** Samples after warm-up that the line is fitted to. */
  samples: number;
  /** The first and last of those samples, as measured. */
  firstBytes: number;
  lastBytes: number;
  /** The line's slope: bytes per 10,000 calls. */
  bytesPer10kCalls: number;
  /** The line's rise from the first to the last sample, as % of its value at the first. */
  growthPercent: number;
  /** (last − first) / first, as measured, in %. */
  measuredGrowthPercent: number;
}

/** A point: calls ended so far, and the figure then. */
export interface Point {
  calls: number;
  bytes: number;
}

/** The trend of `points` (taken after warm-up); undefined with fewer than three. */
export function memoryTrend(points: readonly Point[]): MemoryTrend | undefined {
  if (points.length < 3) return undefined;
  const n = points.length;
  const meanX = points.reduce((s, p) => s + p.calls, 0) / n;
  const meanY = points.reduce((s, p) => s + p.bytes, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.calls - meanX) * (p.bytes - meanY);
    sxx += (p.calls - meanX) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const [first, last] = [points[0], points[n - 1]];
  const atFirst = meanY + slope * (first.calls - meanX);
  const rise = slope * (last.calls - first.calls);
  return {
    samples: n,
    firstBytes: first.bytes,
    lastBytes: last.bytes,
    bytesPer10kCalls: slope * 10_000,
    growthPercent: (100 * rise) / atFirst,
    measuredGrowthPercent: (100 * (last.bytes - first.bytes)) / first.bytes,
  };
}
