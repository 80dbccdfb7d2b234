import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The benches, each with a folder of its own under bench/. */
export type BenchName = "codec" | "load" | "group" | "soak";

/** Where a bench's reports go: its folder under `outDir` (bench/, or out/bench for a partial run). */
export function reportDir(outDir: string, bench: BenchName): string {
  const dir = path.join(outDir, bench);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Writes a run's raw results as JSON, for scripts, to out/bench/`name`.json and gives the
 * path: the repo keeps the reports a reader needs (Markdown and plots), not raw dumps.
 */
export function writeRawResults(root: string, name: string, data: unknown): string {
  const dir = path.join(root, "out", "bench");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
