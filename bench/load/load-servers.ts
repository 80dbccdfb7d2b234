import path from "node:path";
import { spawnServer, type WorkerProcess } from "../../src/cli/worker-process";

/** A server process of the load bench and the address it serves on. */
export type Served = WorkerProcess;

/** The most calls at once the load bench makes; the worker and the echo both take that many. */
export const MAX_CONCURRENCY = 64;
/** The worker's threads beyond its call limit (CONTROL_THREADS in worker/main.py); the echo gets as many. */
const CONTROL_THREADS = 4;

/** Starts the worker on 8 CPU devices, allowing the examples and MAX_CONCURRENCY calls at once. */
export function startWorker(root: string): Promise<Served> {
  return serve(root, [
    "-m",
    "colocated_wire.worker",
    "--port",
    "0",
    "--devices",
    "8",
    "--allow-module",
    "colocated_wire.examples",
    "--max-concurrent-calls",
    String(MAX_CONCURRENCY),
    "--max-inflight-bytes",
    String(4 * 2 ** 30),
  ]);
}

/** Starts bench/load/load_echo.py with as many threads as the worker has. */
export function startEcho(root: string): Promise<Served> {
  const threads = String(MAX_CONCURRENCY + CONTROL_THREADS);
  return serve(root, [path.join(root, "bench", "load", "load_echo.py"), "--threads", threads]);
}

/** Stops a server: SIGTERM, and resolves once it has exited. */
export function stop(served: Served): Promise<void> {
  return served.stop();
}

function serve(root: string, args: string[]): Promise<Served> {
  return spawnServer(path.join(root, ".venv", "bin", "python"), args, { cwd: root });
}
