import { type ChildProcess, spawn } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import path from "node:path";

/** The workers of one JAX job, started by the group bench, and where they serve. */
export interface Job {
  targets: string[];
  stop(): Promise<void>;
}

/**
 * Starts `processes` workers of `devices` CPU devices each, allowing the examples: one job of
 * many processes (jax.distributed on a free coordinator port) when there are several, a plain
 * worker when there is one. Resolves once every worker serves.
 */
export async function startJob(root: string, processes: number, devices: number): Promise<Job> {
  const base = ["-m", "colocated_wire.worker", "--port", "0", "--devices", String(devices)];
  const flags = [...base, "--allow-module", "colocated_wire.examples"];
  const coordinator = `127.0.0.1:${await freePort()}`;
  const jobFlags = (i: number) =>
    processes === 1
      ? []
      : [
          "--coordinator",
          coordinator,
          "--num-processes",
          String(processes),
          "--process-id",
          String(i),
        ];
  const children: ChildProcess[] = [];
  const stop = () => Promise.all(children.map(stopChild)).then(() => undefined);
  try {
    const targets = await Promise.all(
      Array.from({ length: processes }, (_, i) => {
        const child = spawn(path.join(root, ".venv", "bin", "python"), [...flags, ...jobFlags(i)], {
          cwd: root,
          env: { ...process.env, XLA_FLAGS: "" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        return serving(child);
      }),
    );
    return { targets, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The address a worker prints once it serves; rejects if it exits first. */
function serving(child: ChildProcess): Promise<string> {
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`a worker exited (${code})\n${stderr}`)));
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      const found = /listening on (\S+)/.exec(stdout);
      if (found) resolve(found[1]);
    });
  });
}

/** SIGTERM (every member of a job at once: they leave it together), SIGKILL after 10 s. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
