import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

/** The repository root, where .venv and scripts/ live. */
export const ROOT = join(__dirname, "..");
const PYTHON = join(ROOT, ".venv", "bin", "python");

/** A real worker process and the address it serves on. */
export interface RunningWorker {
  target: string;
  process: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
}

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
export function startWorker(
  flags: string[],
  timeoutMs = 60_000,
  env: Record<string, string> = {},
): Promise<RunningWorker> {
  const args = ["-m", "colocated_wire.worker", "--port", "0", "--devices", "8", ...flags];
  const child = spawn(PYTHON, args, {
    cwd: ROOT,
    env: { ...process.env, XLA_FLAGS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const worker: RunningWorker = { target: "", process: child, stderr: () => stderr };
  started.push(worker);
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`no port within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`worker ${flags.join(" ")}: ${why}\n${stderr}`));
    };
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /listening on (\S+)/.exec(stdout);
      if (found) {
        clearTimeout(timer);
        worker.target = found[1];
        resolve(worker);
      }
    });
    child.on("exit", (code, signal) => fail(`exited (${code ?? signal}) before serving`));
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
  const job = ["--coordinator", coordinator, "--num-processes", String(processes)];
  return Promise.all(
    Array.from({ length: processes }, (_, i) =>
      startWorker([...flags, "--devices", String(devices), ...job, "--process-id", String(i)]),
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
  await Promise.all(started.splice(0).map((w) => stop(w.process, graceMs)));
}

function stop(child: ChildProcess, graceMs: number): Promise<void> {
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
