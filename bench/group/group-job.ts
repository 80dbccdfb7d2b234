import { setMaxListeners } from "node:events";
import path from "node:path";
import { freePort, jobFlags, spawnServer, type WorkerProcess } from "../../src/cli/worker-process";

/** The workers of one JAX job, started by the group bench, and where they serve. */
export interface Job {
  targets: string[];
  /** The workers' process ids, by process index. */
  pids: number[];
  stop(): Promise<void>;
}

/**
 * Starts `processes` workers of `devices` CPU devices each, allowing the examples: one job of
 * many processes (jax.distributed on a free coordinator port) when there are several, a plain
 * worker when there is one. Resolves once every worker serves.
 */
export async function startJob(root: string, processes: number, devices: number): Promise<Job> {
  const flags = ["--devices", String(devices), "--allow-module", "colocated_wire.examples"];
  const { workers, stop } = await startJobWorkers(root, processes, flags);
  return {
    targets: workers.map((w) => w.target),
    pids: workers.map((w) => w.process.pid ?? 0),
    stop,
  };
}

/**
 * Starts `processes` workers with `flags` (beyond the module, the port and the job's own) as
 * one JAX job, and resolves with their processes, by process id, once every one serves (each
 * within `timeoutMs`, when given). When one fails to start, every other is stopped: it would
 * wait for the missing one.
 */
export async function startJobWorkers(
  root: string,
  processes: number,
  flags: readonly string[],
  timeoutMs?: number,
): Promise<{ workers: WorkerProcess[]; stop(): Promise<void> }> {
  const python = path.join(root, ".venv", "bin", "python");
  const base = ["-m", "colocated_wire.worker", "--port", "0", ...flags];
  const coordinator = `127.0.0.1:${await freePort()}`;
  const workers: WorkerProcess[] = []; // by process id
  // Every member of a job leaves it together: SIGTERM to all at once.
  const stop = () => Promise.all(workers.flatMap((w) => (w ? [w.stop()] : []))).then(() => {});
  const failed = new AbortController();
  setMaxListeners(0, failed.signal); // one listener per worker
  const start = async (i: number) => {
    const args = [...base, ...jobFlags(coordinator, processes, i)];
    try {
      workers[i] = await spawnServer(python, args, { cwd: root, timeoutMs, signal: failed.signal });
    } catch (error) {
      failed.abort();
      throw error;
    }
  };
  try {
    await Promise.all(Array.from({ length: processes }, (_, i) => start(i)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { workers, stop };
}
