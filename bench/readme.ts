import { readFileSync, writeFileSync } from "node:fs";

const START = "<!-- bench-results:start -->";
const END = "<!-- bench-results:end -->";

/** Puts a full run's summary between docs/benchmarks.md's markers, so the page carries the latest run. */
export function updateReadme(readmePath: string, summary: string): void {
  const text = readFileSync(readmePath, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${readmePath} has no ${START} ... ${END} section`);
  writeFileSync(
    readmePath,
    `${text.slice(0, start + START.length)}\n${summary}\n${text.slice(end)}`,
  );
}
