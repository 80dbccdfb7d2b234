import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/**
 * Memory over a soak part, sampled every few seconds: the worker's resident size from
 * /proc/PID/status (VmRSS) and, when the worker serves metrics, from its
 * `process_resident_memory_bytes`; and this client's V8 heap in use, after a full GC when
 * Node runs with --expose-gc.
 */

/** One sample; a figure is absent when its source could not be read. */
export interface MemorySample {
  /** Seconds since the part started. */
  atS: number;
  /** Calls ended so far. */
  calls: number;
  /** VmRSS of /proc/PID/status. */
  workerRssProcBytes?: number;
  /** process_resident_memory_bytes of the worker's /metrics. */
  workerRssMetricsBytes?: number;
  /** process.memoryUsage().heapUsed, after global.gc() when exposed. */
  clientHeapBytes: number;
}

/** Where the samples come from. */
export interface MemorySources {
  pid: number;
  /** http://127.0.0.1:PORT/metrics, when the worker serves metrics. */
  metricsUrl?: string;
}

/** The resident size of a process from /proc/PID/status, undefined without /proc. */
export function residentBytesFromProc(pid: number): number | undefined {
  try {
    const found = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return found ? Number(found[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** process_resident_memory_bytes from a Prometheus text page, undefined if it cannot be read. */
export async function residentBytesFromMetrics(url: string): Promise<number | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return undefined;
    const found = /^process_resident_memory_bytes\s+(\S+)$/m.exec(await response.text());
    return found ? Number(found[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether this Node exposes gc() (node --expose-gc): heap figures are then after a full GC. */
export function gcExposed(): boolean {
  return typeof globalThis.gc === "function";
}

/** This process's V8 heap in use, after a full GC when it can run one. */
export function clientHeapBytes(): number {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

/**
 * Samples every `intervalMs` until stopped, the first at once; `calls()` says how many calls
 * have ended. stop() resolves with the samples once the last one is taken.
 */
export function sampleMemory(
  sources: MemorySources,
  intervalMs: number,
  calls: () => number,
): { stop(): Promise<MemorySample[]> } {
  const started = performance.now();
  const samples: MemorySample[] = [];
  let stopped = false;
  const take = async () => {
    const sample: MemorySample = {
      atS: (performance.now() - started) / 1000,
      calls: calls(),
      workerRssProcBytes: residentBytesFromProc(sources.pid),
      clientHeapBytes: clientHeapBytes(),
    };
    if (sources.metricsUrl) {
      sample.workerRssMetricsBytes = await residentBytesFromMetrics(sources.metricsUrl);
    }
    samples.push(sample);
  };
  let pending = take();
  const timer = setInterval(() => {
    if (!stopped) pending = pending.then(take);
  }, intervalMs);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await pending;
      return samples;
    },
  };
}
