import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { packageRoot } from "./package-version";

/** A Python server this process started (a worker, or the bench's echo), and where it serves. */
export interface WorkerProcess {
  target: string;
  process: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Where and how to run a server. */
export interface SpawnOptions {
  cwd?: string;
  /** Added to this process's environment (XLA_FLAGS is cleared: the worker sets its own). */
  env?: Record<string, string>;
  /** Rejects (and kills the process) if it has not said where it listens by then. */
  timeoutMs?: number;
  /** Rejects (and kills the process) when aborted before it serves. */
  signal?: AbortSignal;
}

/** The project's Python: $COLOCATED_WIRE_PYTHON, else .venv/bin/python of the package's folder. */
export function defaultPython(): string {
  return process.env.COLOCATED_WIRE_PYTHON ?? join(packageRoot(), ".venv", "bin", "python");
}

/**
 * Runs `python args` and resolves once it prints "listening on ADDRESS" (as the worker and the
 * bench's echo do); rejects with its stderr if it exits first.
 */
export function spawnServer(
  python: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<WorkerProcess> {
  const child = spawn(python, args, {
    cwd: options.cwd,
    env: { ...process.env, XLA_FLAGS: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const server: WorkerProcess = {
    target: "",
    process: child,
    stderr: () => stderr,
    stop: (graceMs) => stopProcess(child, graceMs),
  };
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${python} ${args.join(" ")}: ${why}\n${stderr.trim()}`));
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => fail(`no address within ${options.timeoutMs} ms`), options.timeoutMs);
    options.signal?.addEventListener("abort", () => fail("aborted"), { once: true });
    child.on("error", (error) => fail(error.message));
    child.on("exit", (code, signal) => fail(`exited (${code ?? signal}) before serving`));
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /listening on (\S+?:\d+)(?=\D)/.exec(stdout); // not a port cut by a chunk's end
      if (found && !server.target) {
        clearTimeout(timer);
        server.target = found[1];
        resolve(server);
      }
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** A free TCP port on 127.0.0.1: bound, then released, for a JAX job's coordinator. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The worker flags that make it process `id` of a job of `processes` (none for a job of one). */
export function jobFlags(coordinator: string, processes: number, id: number): string[] {
  if (processes === 1) return [];
  const job = ["--coordinator", coordinator, "--num-processes", String(processes)];
  return [...job, "--process-id", String(id)];
}

/**
 * Starts `python -m colocated_wire.worker` on `devices` CPU devices, allowing the example
 * module, and resolves once it says where it listens.
 */
export function startWorker(python: string, devices: number): Promise<WorkerProcess> {
  if (!existsSync(python)) {
    throw new Error(
      `${python}: no such Python; give --python (or COLOCATED_WIRE_PYTHON) with colocated_wire installed, or in a clone run bash scripts/python-env.sh`,
    );
  }
  const args = ["-m", "colocated_wire.worker", "--port", "0", "--devices", String(devices)];
  return spawnServer(python, [...args, "--allow-module", "colocated_wire.examples"]);
}
