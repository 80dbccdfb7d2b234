import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { reportDir, writeRawResults } from "../common/output";
import { type FixedRow, measureFixedApart } from "./group-fixed";
import { groupPlotSvg } from "./group-plot";
import { type DirectRow, measureRealApart, type RealRow } from "./group-real";
import { groupMarkdown, updateGroupReadme } from "./group-report";
import { type GroupTarget, groupTargets } from "./group-targets";

/**
 * The group bench: a WorkerGroup over real workers, one JAX job of 1 to 16
 * processes (bench/group/group-real.ts), and the controller alone over fixed-answer members from 16
 * to 1,024 (bench/group/group-fixed.ts), kept apart in the results. Part of `npm run bench` (full
 * runs, or `--filter group`; `--filter group-real` or `group-fixed` for one part); alone,
 * `node dist/bench/group/group.js [--quick] [--real] [--fixed]`. Writes group.md and group.svg
 * (bench/README.md says where).
 */

/** Real jobs: processes × devices each. Two devices each; one each at 16, against 32 shards. */
const REAL = {
  full: [1, 2, 4, 8, 16].map((p) => [p, 2]).concat([[16, 1]]),
  quick: [
    [1, 2],
    [2, 2],
    [4, 2],
  ],
};
/** Fixed-answer groups: members × devices each; 256 × 8 against 256 × 2, for shards against members. */
const FIXED = {
  full: [16, 64, 256, 1024].map((m) => [m, 2]).concat([[256, 8]]),
  quick: [
    [16, 2],
    [64, 2],
    [256, 2],
  ],
};
/** The sharded array's side: float32[side, side], 4 MiB (1 MiB with --quick). */
const SIDE = { full: 1024, quick: 512 };
const CALLS = { full: { small: 30, array: 10 }, quick: { small: 10, array: 3 } };

/** Which parts a run measures. */
export interface GroupParts {
  real: boolean;
  fixed: boolean;
}

export interface GroupResults {
  meta: {
    date: string;
    machine: string;
    loadAverage: { before: number; after: number };
    quick: boolean;
  };
  /** The sharded array's side: float32[side, side]. */
  side: number;
  real: RealRow[];
  /** The job of one worker of two devices, called with WorkerClient (no group). */
  direct?: DirectRow;
  fixed: FixedRow[];
  targets: GroupTarget[];
}

/** Measures the parts asked for, one job or group at a time. */
export async function measureGroup(
  root: string,
  quick: boolean,
  parts: GroupParts,
  progress: (task: string) => void = () => {},
): Promise<GroupResults> {
  const size = quick ? "quick" : "full";
  const side = SIDE[size];
  const loadBefore = os.loadavg()[0];
  const real: RealRow[] = [];
  let direct: DirectRow | undefined;
  for (const [workers, devices] of parts.real ? REAL[size] : []) {
    const measured = await measureRealApart(root, workers, devices, side, CALLS[size], progress);
    real.push(measured.row);
    direct ??= measured.direct;
  }
  const fixed: FixedRow[] = [];
  for (const [members, devices] of parts.fixed ? FIXED[size] : []) {
    fixed.push(await measureFixedApart(members, devices, side, CALLS[size], progress));
  }
  const cpus = os.cpus();
  return {
    meta: {
      date: new Date().toISOString(),
      machine: `${cpus.length} × ${cpus[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
      loadAverage: { before: loadBefore, after: os.loadavg()[0] },
      quick,
    },
    side,
    real,
    ...(direct ? { direct } : {}),
    fixed,
    targets: groupTargets(fixed),
  };
}

/** Which parts of the group bench a run includes: full runs, and any --filter naming them. */
export function groupParts(quick: boolean, filter?: string): GroupParts | undefined {
  if (filter === undefined) return quick ? undefined : { real: true, fixed: true };
  const asked = filter.split(",");
  const parts = {
    real: asked.includes("group") || asked.includes("group-real"),
    fixed: asked.includes("group") || asked.includes("group-fixed"),
  };
  return parts.real || parts.fixed ? parts : undefined;
}

/** Measures, writes group.md and group.svg to `outDir`/group (the raw results to out/bench/group.json), and (if asked) its section of docs/multi-worker.md. */
export async function runGroupSection(
  root: string,
  outDir: string,
  options: {
    quick: boolean;
    parts: GroupParts;
    readme: boolean;
    progress?: (task: string) => void;
  },
): Promise<GroupResults> {
  const results = await measureGroup(root, options.quick, options.parts, options.progress);
  const dir = reportDir(outDir, "group");
  writeRawResults(root, "group", results);
  writeFileSync(
    path.join(dir, "group.md"),
    `# colocated-wire group bench\n\n${groupMarkdown(results)}\n`,
  );
  writeFileSync(path.join(dir, "group.svg"), groupPlotSvg(results));
  if (options.readme) updateGroupReadme(path.join(root, "docs", "multi-worker.md"), results);
  return results;
}

if (require.main === module) {
  const root = path.resolve(__dirname, "..", "..", "..");
  const quick = process.argv.includes("--quick");
  const only = { real: process.argv.includes("--real"), fixed: process.argv.includes("--fixed") };
  const parts = only.real || only.fixed ? only : { real: true, fixed: true };
  const whole = !quick && parts.real && parts.fixed;
  const outDir = path.join(root, whole ? "bench" : "out/bench");
  runGroupSection(root, outDir, { quick, parts, readme: whole, progress: (t) => console.error(t) })
    .then((r) => console.log(groupMarkdown(r)))
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    });
}
