import path from "node:path";
import { jaxLabel, PLUGIN_JAX, type PluginJax, pythonFor } from "./plugin-versions";
import { runPythonScript } from "./python";
import type { PluginCase, PluginResult, PluginSideId, PluginSideResult } from "./results";

/** The colocated calls bench/codec/plugin_bench.py makes, by JAX and by colocated_wire.plugin. */
const PLUGIN_CASES: PluginCase[] = [
  { id: "P 1 2x4", leafCount: 1, mesh: [2, 4] },
  { id: "P 1000 8x8", leafCount: 1_000, mesh: [8, 8] },
  { id: "P 1000 8x8 fresh", leafCount: 1_000, mesh: [8, 8], fresh: true },
  { id: "P 1000 32x32", leafCount: 1_000, mesh: [32, 32] },
  { id: "P 10000 32x32", leafCount: 10_000, mesh: [32, 32] },
];

/** Timed runs per side: each first call is a fresh colocated function, seconds at 10,000 leaves. */
const RUNS = 3;

const SIDES: readonly PluginSideId[] = ["jax", "plugin"];

/** One Python process: the cases measured under one JAX version. */
export interface PluginRun {
  jax: PluginJax;
  cases: PluginCase[];
}

/**
 * The plugin runs of a bench run, one per JAX version (bench/codec/plugin-versions.ts): the smallest
 * case only with --quick, on every version; with a filter, the cases whose id contains one of
 * its comma-separated parts.
 */
export function pluginRuns(quick: boolean, filter?: string): PluginRun[] {
  const parts = filter?.split(",");
  const wanted = (quick ? PLUGIN_CASES.slice(0, 1) : PLUGIN_CASES).filter(
    (c) => !parts || parts.some((part) => c.id.includes(part)),
  );
  return PLUGIN_JAX.map((jax) => ({
    jax,
    cases: wanted.filter((c) => !jax.cases || jax.cases.includes(c.id)),
  })).filter((run) => run.cases.length);
}

type PluginMessage =
  | { type: "startup"; jax: string; python: string; devices: number; package: string }
  | ({ type: "result"; case: string; side: PluginSideId } & PluginSideResult)
  | { type: "error"; case: string; side: PluginSideId; message: string };

/** Runs every run in turn; the versions are .venv's, as every other section reports. */
export async function measurePlugin(
  root: string,
  runs: readonly PluginRun[],
  onProgress: (task: string) => void,
): Promise<{ results: PluginResult[]; versions?: { jax: string; python: string } }> {
  const results: PluginResult[] = [];
  let versions: { jax: string; python: string } | undefined;
  for (const run of runs) {
    const measured = await measureRun(root, run, onProgress);
    results.push(...measured.results);
    if (run.jax.version === "venv") versions = measured.versions;
  }
  return { results, versions };
}

/**
 * Runs plugin_bench.py once under one JAX, on as many devices as the largest mesh; a venv that
 * cannot be built, a package imported from elsewhere than the working tree's python/, or a
 * crash fails every side left.
 */
async function measureRun(
  root: string,
  run: PluginRun,
  onProgress: (task: string) => void,
): Promise<{ results: PluginResult[]; versions?: { jax: string; python: string } }> {
  const jax = jaxLabel(run.jax);
  const results = new Map(
    run.cases.map((c) => [c.id, { jax, case: c, sides: {}, errors: {} } as PluginResult]),
  );
  const failAll = (message: string) => {
    for (const r of results.values()) {
      for (const side of SIDES) {
        if (!r.sides[side] && !r.errors[side]) r.errors[side] = message;
      }
    }
  };
  let versions: { jax: string; python: string } | undefined;
  let refused: string | undefined;
  const devices = Math.max(...run.cases.map((c) => c.mesh[0] * c.mesh[1]));
  const wantPackage = path.join(root, "python", "colocated_wire");
  try {
    const python = pythonFor(root, run.jax);
    const job = { runs: RUNS, cases: run.cases };
    await runPythonScript(
      root,
      "plugin_bench.py",
      devices,
      job,
      (line) => {
        const m = line as PluginMessage;
        if (m.type === "startup") {
          versions = { jax: m.jax, python: m.python };
          for (const r of results.values()) r.jax = m.jax;
          if (m.package !== wantPackage) {
            refused = `colocated_wire imported from ${m.package}, not ${wantPackage}`;
          }
          return;
        }
        const r = results.get(m.case) as PluginResult;
        if (refused) r.errors[m.side] = refused;
        else if (m.type === "error") r.errors[m.side] = m.message;
        else {
          const { firstCall, steadyCall, readBack, programBytes, carrierBytes } = m;
          const read = readBack ? { readBack } : {};
          r.sides[m.side] = { firstCall, steadyCall, ...read, programBytes, carrierBytes };
        }
        onProgress(`${m.case} (${m.side}, JAX ${r.jax})`);
      },
      python,
    );
  } catch (error) {
    const message = (error as Error).message;
    failAll(message.split("\n")[0]);
    process.stderr.write(`\n${message}\n`);
  }
  return { results: [...results.values()], versions };
}
