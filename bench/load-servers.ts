import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";

/** A server process of the load bench and the address it serves on. */
export interface Served {
  target: string;
  process: ChildProcess;
}

/** The most calls at once the load bench makes; the worker and the echo both take that many. */
export const MAX_CONCURRENCY = 64;
/** The worker's threads beyond its call limit (CONTROL_THREADS in worker.py); the echo gets as many. */
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

/** Starts bench/load_echo.py with as many threads as the worker has. */
export function startEcho(root: string): Promise<Served> {
  const threads = String(MAX_CONCURRENCY + CONTROL_THREADS);
  return serve(root, [path.join(root, "bench", "load_echo.py"), "--threads", threads]);
}

/** Stops a server: SIGTERM, and resolves once it has exited. */
export function stop(served: Served): Promise<void> {
  const child = served.process;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.on("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

function serve(root: string, args: string[]): Promise<Served> {
  const python = path.join(root, ".venv", "bin", "python");
  const child = spawn(python, args, {
    cwd: root,
    env: { ...process.env, XLA_FLAGS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`${args[0]} exited (${code})\n${stderr}`)));
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /listening on (\S+)/.exec(stdout);
      if (found) resolve({ target: found[1], process: child });
    });
  });
}
