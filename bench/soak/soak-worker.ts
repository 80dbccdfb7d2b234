import { type ChildProcess, execFileSync } from "node:child_process";
import path from "node:path";
import { spawnServer, type WorkerProcess } from "../../src/cli/worker-process";

/**
 * The soak's worker processes: real `python -m colocated_wire.worker` on 127.0.0.1 with its
 * default flags but the call limit (and what a part needs: a fixed port to restart on, a
 * grace period, a metrics port), killed and restarted at will.
 */

/** The flags a part starts its worker with, beyond the defaults. */
export interface SoakWorkerFlags {
  /** 0 (or absent): a free port. */
  port?: number;
  maxConcurrentCalls: number;
  /** --grace-period, seconds; the worker's default (30) when absent. */
  gracePeriodS?: number;
  /** --metrics-port, where the worker has that flag. */
  metricsPort?: number;
}

/** How long a worker may take to say where it listens: JAX starts slowly on a busy machine. */
const START_TIMEOUT_MS = 180_000;

/** Starts a worker on 8 CPU devices that may run colocated_wire.examples; resolves once it serves. */
export function startSoakWorker(root: string, flags: SoakWorkerFlags): Promise<WorkerProcess> {
  const args = [
    "-m",
    "colocated_wire.worker",
    "--host",
    "127.0.0.1",
    "--port",
    String(flags.port ?? 0),
  ];
  args.push("--allow-module", "colocated_wire.examples");
  args.push("--max-concurrent-calls", String(flags.maxConcurrentCalls));
  if (flags.gracePeriodS !== undefined) args.push("--grace-period", String(flags.gracePeriodS));
  if (flags.metricsPort !== undefined) args.push("--metrics-port", String(flags.metricsPort));
  return spawnServer(path.join(root, ".venv", "bin", "python"), args, {
    cwd: root,
    timeoutMs: START_TIMEOUT_MS,
  });
}

/** How a process ended: its exit code, or the signal that ended it. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves once the process has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
}

/** How long a process may take to be gone after SIGKILL before the soak gives up on it. */
const KILL_TIMEOUT_MS = 10_000;

/** SIGKILL: the worker gets no chance to drain, as when its host dies. Resolves once it is gone. */
export async function killWorker(worker: WorkerProcess): Promise<void> {
  const gone = exited(worker.process);
  worker.process.kill("SIGKILL");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the worker (pid ${worker.process.pid}) outlived SIGKILL by ${KILL_TIMEOUT_MS} ms`,
          ),
        ),
      KILL_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([gone, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The port of a `host:port` target. */
export function portOf(target: string): number {
  return Number(target.slice(target.lastIndexOf(":") + 1));
}

/** Whether this worker has a flag (`--metrics-port`), from its --help. */
export function workerHasFlag(root: string, flag: string): boolean {
  const python = path.join(root, ".venv", "bin", "python");
  try {
    const help = execFileSync(python, ["-m", "colocated_wire.worker", "--help"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return help.includes(flag);
  } catch {
    return false;
  }
}

/** Where a worker started with --metrics-port serves them, as its log says; undefined if it does not. */
export async function metricsUrlOf(
  worker: WorkerProcess,
  waitMs = 5_000,
): Promise<string | undefined> {
  const until = Date.now() + waitMs;
  for (;;) {
    const found = /metrics on (http:\/\/\S+\/metrics)/.exec(worker.stderr());
    if (found) return found[1];
    // stderr is a pipe of its own: its line may come after stdout's "listening on".
    if (Date.now() >= until) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
