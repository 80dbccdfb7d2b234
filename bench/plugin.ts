import { runPythonScript } from "./python";
import type { PluginCase, PluginResult, PluginSideId, PluginSideResult } from "./results";

/** The colocated calls bench/plugin_bench.py makes, by JAX and by colocated_wire.plugin. */
const PLUGIN_CASES: PluginCase[] = [
  { id: "P 1 2x4", leafCount: 1, mesh: [2, 4] },
  { id: "P 1000 8x8", leafCount: 1_000, mesh: [8, 8] },
  { id: "P 1000 32x32", leafCount: 1_000, mesh: [32, 32] },
  { id: "P 10000 32x32", leafCount: 10_000, mesh: [32, 32] },
];

/** Timed runs per side: each first call is a fresh colocated function, seconds at 10,000 leaves. */
const RUNS = 3;

/** The plugin cases of a run: the smallest only with --quick; those whose id contains `filter`. */
export function pluginCases(quick: boolean, filter?: string): PluginCase[] {
  const cases = quick ? PLUGIN_CASES.slice(0, 1) : PLUGIN_CASES;
  return filter === undefined ? cases : cases.filter((c) => c.id.includes(filter));
}

type PluginMessage =
  | { type: "startup"; jax: string; python: string; devices: number }
  | ({ type: "result"; case: string; side: PluginSideId } & PluginSideResult)
  | { type: "error"; case: string; side: PluginSideId; message: string };

/** Runs plugin_bench.py once, on as many devices as the largest mesh; a crash fails every side left. */
export async function measurePlugin(
  root: string,
  cases: readonly PluginCase[],
  onProgress: (task: string) => void,
): Promise<{ results: PluginResult[]; versions?: { jax: string; python: string } }> {
  const results = new Map(
    cases.map((c) => [c.id, { case: c, sides: {}, errors: {} } as PluginResult]),
  );
  if (!cases.length) return { results: [] };
  let versions: { jax: string; python: string } | undefined;
  const devices = Math.max(...cases.map((c) => c.mesh[0] * c.mesh[1]));
  await runPythonScript(root, "plugin_bench.py", devices, { runs: RUNS, cases }, (line) => {
    const m = line as PluginMessage;
    if (m.type === "startup") {
      versions = { jax: m.jax, python: m.python };
      return;
    }
    const r = results.get(m.case) as PluginResult;
    if (m.type === "error") r.errors[m.side] = m.message;
    else {
      const { firstCall, steadyCall, programBytes, carrierBytes } = m;
      r.sides[m.side] = { firstCall, steadyCall, programBytes, carrierBytes };
    }
    onProgress(`${m.case} (${m.side})`);
  }).catch((error: Error) => {
    for (const r of results.values()) {
      for (const side of ["jax", "plugin"] as const) {
        if (!r.sides[side] && !r.errors[side]) r.errors[side] = error.message.split("\n")[0];
      }
    }
    process.stderr.write(`\n${error.message}\n`);
  });
  return { results: [...results.values()], versions };
}
