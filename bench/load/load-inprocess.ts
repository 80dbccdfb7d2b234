import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

/** The load bench's 8-device program run in-process (bench/load/load_inprocess.py) at one thread count. */
export interface InProcessRow {
  threads: number;
  calls: number;
  callsPerSecond: number;
  msPerCall: number;
}

/**
 * The same JAX work as the worker's 8-device calls, in a Python process of its own: one thread
 * (the serial rate) and as many as the worker's protection lets launch and wait at once.
 */
export async function measureInProcess(root: string, calls: number): Promise<InProcessRow[]> {
  const python = path.join(root, ".venv", "bin", "python");
  const script = path.join(root, "bench", "load", "load_inprocess.py");
  const args = [script, "--program", "8 devices", "--calls", String(calls)];
  const { stdout } = await promisify(execFile)(python, args, { cwd: root });
  const rows = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as InProcessRow);
  if (!rows.some((r) => r.threads === 1)) throw new Error(`load_inprocess.py gave no serial row`);
  return rows.map(({ threads, calls, callsPerSecond, msPerCall }) => ({
    threads,
    calls,
    callsPerSecond,
    msPerCall,
  }));
}

/** Row by row (by thread count), the faster of two runs. */
export function fasterInProcess(a: InProcessRow[], b: InProcessRow[]): InProcessRow[] {
  return a.map((row) => {
    const other = b.find((r) => r.threads === row.threads);
    return other !== undefined && other.callsPerSecond > row.callsPerSecond ? other : row;
  });
}
