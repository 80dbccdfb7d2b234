import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, jobFlags, spawnServer, type WorkerProcess } from "../src/cli/worker-process";

export { freePort };

/** The repository root, where .venv and scripts/ live. */
export const ROOT = join(__dirname, "..");
const PYTHON = join(ROOT, ".venv", "bin", "python");

/** A real worker process and the address it serves on. */
export type RunningWorker = WorkerProcess;

const started: RunningWorker[] = [];

/** Creates or refreshes the Python virtual environment (fast when it is current). */
export function ensurePythonEnv(): void {
  execFileSync("bash", [join(ROOT, "scripts", "python-env.sh")], { stdio: "inherit" });
}

/** Runs a Python script of the repository with the project's virtual environment. */
export async function runPython(script: string, ...args: string[]): Promise<void> {
  await promisify(execFile)(PYTHON, [join(ROOT, script), ...args], { cwd: ROOT });
}

/** Starts `python -m colocated_wire.worker` on 8 CPU devices and waits for its port. */
export async function startWorker(
  flags: string[],
  timeoutMs = 60_000,
  env: Record<string, string> = {},
): Promise<RunningWorker> {
  const args = ["-m", "colocated_wire.worker", "--port", "0", "--devices", "8", ...flags];
  const worker = await spawnServer(PYTHON, args, { cwd: ROOT, env, timeoutMs });
  started.push(worker);
  return worker;
}

/**
 * Starts `processes` workers of `devices` CPU devices each as one JAX job (process 0 serves
 * the coordinator), all at once: each serves only once every process has joined.
 */
export async function startJob(
  processes: number,
  devices: number,
  flags: string[] = [],
): Promise<RunningWorker[]> {
  const coordinator = `127.0.0.1:${await freePort()}`;
  return Promise.all(
    Array.from({ length: processes }, (_, i) =>
      startWorker([...flags, "--devices", String(devices), ...jobFlags(coordinator, processes, i)]),
    ),
  );
}

/** Resolves when the worker writes `text` to stderr, after this call; rejects if it exits first. */
export function whenStderrSays(worker: RunningWorker, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk;
      if (!seen.includes(text)) return;
      stopListening();
      resolve();
    };
    const onExit = () => {
      stopListening();
      reject(new Error(`the worker exited before saying ${JSON.stringify(text)}`));
    };
    const stopListening = () => {
      worker.process.stderr?.off("data", onData);
      worker.process.off("exit", onExit);
    };
    worker.process.stderr?.on("data", onData);
    worker.process.on("exit", onExit);
  });
}

/** Stops every worker this file started: SIGTERM, then SIGKILL after a grace period. */
export async function stopAllWorkers(graceMs = 3_000): Promise<void> {
  await Promise.all(started.splice(0).map((w) => w.stop(graceMs)));
}
