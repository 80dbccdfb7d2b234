import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Case } from "../../test/support/scenarios";
import type { Policy, Timing } from "../common/measure";
import type { CompressedSizes, SchemaLimit } from "./results";

/** What bench/codec/jax_bench.py prints, one JSON object per line. */
export type PythonMessage =
  | { type: "startup"; threads: number; seconds: number; jax: string; python: string }
  | {
      type: "result";
      case: string;
      side: PythonSide;
      bytes: number;
      sha256?: string;
      encode: Timing;
      decode: Timing;
      compressed?: CompressedSizes;
      limit?: SchemaLimit;
    }
  | { type: "error"; case: string; side: PythonSide; message: string };

export type PythonSide = "b" | "c" | "d2";

export interface PythonJob {
  deviceCount: number;
  policy: Policy;
  /** deviceIds is null for a regular order (0..n-1), which saves sending 65,536 numbers. */
  cases: { case: Case; deviceIds: number[] | null; sides: PythonSide[] }[];
}

/**
 * Runs jax_bench.py on one job. JAX reads its device count once, at import, so every device
 * count needs a process of its own. Messages are passed on as they arrive (for the progress
 * bar); the startup message gets the wall time from spawn to JAX being up.
 */
export function runPython(
  root: string,
  job: PythonJob,
  onMessage: (message: PythonMessage) => void,
): Promise<void> {
  const started = performance.now();
  return runPythonScript(root, "jax_bench.py", job.deviceCount, job, (line) => {
    const message = line as PythonMessage;
    if (message.type === "startup") message.seconds = (performance.now() - started) / 1000;
    onMessage(message);
  });
}

/**
 * Runs a script of bench/ with JAX on `deviceCount` CPU devices, `job` as JSON on stdin, and
 * passes on each JSON line it prints; fails with the end of its stderr if it exits non-zero.
 * `python` is .venv's unless given (another JAX's venv); whichever it is, the working tree's
 * python/ comes first on PYTHONPATH, so the bench measures the code as it is now.
 */
export function runPythonScript(
  root: string,
  script: string,
  deviceCount: number,
  job: unknown,
  onLine: (message: unknown) => void,
  python = path.join(root, ".venv", "bin", "python"),
): Promise<void> {
  const pythonPath = [path.join(root, "python"), process.env.PYTHONPATH].filter(Boolean);
  const child = spawn(python, [path.join(root, "bench", "codec", script)], {
    cwd: root,
    env: {
      ...process.env,
      PYTHONPATH: pythonPath.join(path.delimiter),
      JAX_PLATFORMS: "cpu",
      XLA_FLAGS: `--xla_force_host_platform_device_count=${deviceCount}`,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  child.stdin.on("error", () => {}); // a child that dies early is reported by its exit code
  child.stdin.end(JSON.stringify(job));
  createInterface({ input: child.stdout }).on("line", (line) => onLine(JSON.parse(line)));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(`${script} (${deviceCount} devices) exited with ${code ?? signal}:\n${stderr}`),
        );
    });
  });
}
