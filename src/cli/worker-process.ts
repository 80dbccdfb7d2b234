import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "./package-version";

/** A Python worker this process started, and the address it serves on. */
export interface WorkerProcess {
  target: string;
  stop(): Promise<void>;
}

/** The project's Python: $COLOCATED_WIRE_PYTHON, else .venv/bin/python of the package's folder. */
export function defaultPython(): string {
  return process.env.COLOCATED_WIRE_PYTHON ?? join(packageRoot(), ".venv", "bin", "python");
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
  const child = spawn(python, [...args, "--allow-module", "colocated_wire.examples"], {
    env: { ...process.env, XLA_FLAGS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("error", (error) => reject(new Error(`${python}: ${error.message}`)));
    child.on("exit", (code, signal) =>
      reject(new Error(`the worker exited (${code ?? signal}) before serving: ${stderr.trim()}`)),
    );
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /listening on (\S+)/.exec(stdout);
      if (found) resolve({ target: found[1], stop: () => stop(child) });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.on("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
