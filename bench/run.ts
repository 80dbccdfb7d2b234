import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { Command } from "commander";
import { allCases, deviceIds } from "../test/support/scenarios";
import { measureDecodeMemory } from "./codec/decode-memory";
import { measureDefaultScenario } from "./codec/default-scenario";
import { diffWanted, measureDiff } from "./codec/diff";
import { diffTargets } from "./codec/diff-report";
import { inspectorCases, inspectorMarkdown, runInspectorSection } from "./codec/inspector";
import { measureLimit } from "./codec/limit";
import { DEFAULT_MAX_JAX_DEVICES, type Group, planGroups, sidesOf } from "./codec/plan";
import { plotSvg } from "./codec/plot";
import { measurePlugin, pluginRuns } from "./codec/plugin";
import { type PythonJob, runPython } from "./codec/python";
import { markdownReport, readmeSummary } from "./codec/report";
import type { CaseResult, JaxStartup, RunResults } from "./codec/results";
import { checkTargets } from "./codec/targets";
import { measureTypeScript, warmUpTypeScript } from "./codec/typescript-side";
import { DEFAULT_POLICY, type Timing } from "./common/measure";
import { reportDir, writeRawResults } from "./common/output";
import { groupParts, runGroupSection } from "./group/group";
import { groupMarkdown } from "./group/group-report";
import { loadMarkdown, loadWanted, runLoadSection } from "./load/load";
import { updateReadme } from "./readme";

/** `npm run bench`: every scenario and format in one run; see docs/benchmarks.md. */

const ROOT = path.resolve(__dirname, "..", "..");

interface Options {
  quick: boolean;
  filter?: string;
  out?: string;
  maxJaxDevices: number;
}

async function main(): Promise<void> {
  const options = new Command("bench")
    .description("colocated-wire against JAX's colocated-Python serialization")
    .option(
      "--quick",
      "S1, S5, S6 and the smallest plugin case (under each JAX) only, within two minutes",
      false,
    )
    .option(
      "--filter <text>",
      'only the cases whose id contains the text, such as "S3 fresh regular" (or one of several: "S5,S6")',
    )
    .option(
      "--out <dir>",
      "where each bench's reports go, a folder each (default bench/, or out/bench with --quick or --filter)",
    )
    .option(
      "--max-jax-devices <n>",
      "largest device count JAX is started with",
      Number,
      DEFAULT_MAX_JAX_DEVICES,
    )
    .parse()
    .opts<Options>();
  // Only a full run stands for the project: a partial one goes to out/bench unless told.
  const partial = options.quick || options.filter !== undefined;
  const outDir = path.resolve(options.out ?? path.join(ROOT, partial ? "out/bench" : "bench"));
  // A fresh clone has no virtual environment yet; this creates it (once).
  execFileSync("bash", [path.join(ROOT, "scripts", "python-env.sh")], { stdio: "inherit" });

  const started = Date.now();
  const loadBefore = os.loadavg()[0];
  const groups = planGroups(allCases(options.quick, options.filter), options.maxJaxDevices);
  const plugins = pluginRuns(options.quick, options.filter);
  const results = new Map<string, CaseResult>();
  let total = plugins.reduce((n, run) => n + run.cases.length * 2, 0);
  for (const g of groups) {
    for (const c of g.cases) {
      const { ts, python, skipped } = sidesOf(c, g);
      total += ts.length + python.length;
      results.set(c.id, { case: { ...c, devices: g.devices }, sides: {}, skipped, errors: {} });
    }
  }
  const bar = new SingleBar(
    {
      format: "bench {bar} {value}/{total} | {eta_formatted} left | {task}",
      noTTYOutput: true, // in a log, a line every 10 s
      notTTYSchedule: 10_000,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0, { task: "warming up the TypeScript side" });
  warmUpTypeScript();
  const startups: JaxStartup[] = [];
  let versions = { jax: "?", python: "?" };
  for (const group of groups) {
    runTypeScript(group, results, bar);
    const job = pythonJob(group);
    if (!job.cases.length) continue;
    bar.update({ task: `starting JAX on ${group.devices} CPU devices` });
    await runPython(ROOT, job, (m) => {
      if (m.type === "startup") {
        startups.push({ devices: group.devices, seconds: m.seconds, threads: m.threads });
        versions = { jax: m.jax, python: m.python };
        return;
      }
      const r = results.get(m.case) as CaseResult;
      if (m.type === "result") {
        const { bytes, sha256, encode, decode, compressed, limit } = m;
        r.sides[m.side] = {
          bytes,
          sha256,
          encode,
          decode,
          ...(compressed ? { compressed } : {}),
          ...(limit ? { limit } : {}),
        };
      } else r.errors[m.side] = m.message;
      bar.increment(1, { task: `${m.case} (${m.side})` });
    }).catch((error: Error) => {
      for (const item of job.cases) {
        const r = results.get(item.case.id) as CaseResult;
        for (const side of item.sides) {
          if (!r.sides[side] && !r.errors[side]) {
            r.errors[side] = error.message.split("\n")[0];
            bar.increment(1);
          }
        }
      }
      process.stderr.write(`\n${error.message}\n`);
    });
  }
  bar.update({ task: "colocated calls, JAX and the plugin, under each JAX version" });
  const measured = await measurePlugin(ROOT, plugins, (task) => bar.increment(1, { task }));
  const plugin = measured.results;
  if (versions.jax === "?" && measured.versions) versions = measured.versions;
  // The load bench (the worker beside a gRPC echo) writes load.json, load.md and its section of docs/benchmarks.md.
  const load = loadWanted(options.quick, options.filter)
    ? await runLoadSection(ROOT, outDir, {
        quick: options.quick,
        readme: !partial && !options.out,
        progress: (task) => bar.update({ task }),
      })
    : undefined;
  // Many workers as one JAX job: real workers, 1 to 16, and the controller alone over
  // fixed-answer members, 16 to 1,024 (group.json, group.md, group.svg, its section of docs/benchmarks.md).
  const groupPart = groupParts(options.quick, options.filter);
  const fanOut = groupPart
    ? await runGroupSection(ROOT, outDir, {
        quick: options.quick,
        parts: groupPart,
        readme: !partial && !options.out,
        progress: (task) => bar.update({ task }),
      })
    : undefined;
  // The inspector page's time to first draw in Chromium: inspector.json and inspector.md.
  const inspectorFor = inspectorCases(options.quick, options.filter);
  const inspector = inspectorFor.length
    ? await runInspectorSection(ROOT, inspectorFor, outDir, (task) => bar.update({ task }))
    : undefined;
  // Two S2 payloads diffed, in both languages, beside decoding both (--filter diff).
  const diffFor = diffWanted(options.quick, options.filter);
  const diffRun = diffFor.length
    ? await measureDiff(ROOT, diffFor, (task) => bar.update({ task }))
    : undefined;
  const diff = diffRun?.rows;
  if (versions.jax === "?" && diffRun?.versions) versions = diffRun.versions;
  bar.stop();

  const cases = [...results.values()];
  const run: RunResults = {
    meta: {
      date: new Date(started).toISOString(),
      machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
      versions: `Node ${process.version}, Python ${versions.python}, JAX ${versions.jax}`,
      quick: partial,
      commit: gitCommit(),
      policy: DEFAULT_POLICY,
      seconds: Math.round((Date.now() - started) / 1000),
      loadAverage: { before: loadBefore, after: os.loadavg()[0] },
    },
    defaultScenario: measureDefaultScenario(DEFAULT_POLICY),
    cases,
    jaxStartup: startups,
    crossCheck: crossCheck(cases),
    targets: [],
    ...(options.quick ? {} : { decodeMemory: measureDecodeMemory() }),
    plugin,
    ...(diff ? { diff } : {}),
  };
  run.targets = [...checkTargets(cases, run.decodeMemory), ...diffTargets(diff)];
  const report = markdownReport(run);
  const raw = writeRawResults(ROOT, "results", run);
  const codecDir = reportDir(outDir, "codec");
  writeFileSync(
    path.join(codecDir, "results.md"),
    `# colocated-wire benchmark results\n\n${report}\n`,
  );
  writeFileSync(path.join(codecDir, "plot.svg"), plotSvg(cases));
  // Only a full run into bench/ stands for the project: docs/benchmarks.md shows that one.
  if (!partial && !options.out)
    updateReadme(path.join(ROOT, "docs", "benchmarks.md"), readmeSummary(run));
  console.log(report);
  if (load) console.log(`\n${loadMarkdown(load)}`);
  if (fanOut) console.log(`\n${groupMarkdown(fanOut)}`);
  if (inspector) console.log(`\n${inspectorMarkdown(inspector)}`);
  console.log(
    `\nWrote results.md and plot.svg to ${codecDir}, the raw results to ${raw} (${run.meta.seconds} s).`,
  );

  const mismatches = run.crossCheck.filter((x) => !x.identical);
  if (mismatches.length) {
    console.error(
      `\n*** BUG: TypeScript and Python payloads differ in ${mismatches.map((x) => x.case).join(", ")} ***`,
    );
    process.exitCode = 1;
  }
  if ([...cases, ...plugin].some((r) => Object.keys(r.errors).length)) process.exitCode = 1;
  if (diff?.some((r) => r.error)) process.exitCode = 1;
}

/** (a) and (d1) of every case of the group, in this process; for S3, the limit too. */
function runTypeScript(group: Group, results: Map<string, CaseResult>, bar: SingleBar): void {
  let limit: Timing | undefined;
  for (const c of group.cases) {
    const r = results.get(c.id) as CaseResult;
    if (c.scenario === "S3") {
      limit ??= measureLimit(group.devices, DEFAULT_POLICY);
      r.limit = limit;
    }
    for (const side of sidesOf(c, group).ts) {
      bar.update({ task: `${c.id} (${side})` });
      try {
        r.sides[side] = measureTypeScript(c, side, DEFAULT_POLICY);
      } catch (error) {
        r.errors[side] = String(error);
      }
      bar.increment(1);
    }
  }
}

function pythonJob(group: Group): PythonJob {
  return {
    deviceCount: group.devices,
    policy: DEFAULT_POLICY,
    cases: group.cases
      .map((c) => ({
        case: c,
        deviceIds: c.order === "regular" ? null : deviceIds(c),
        sides: sidesOf(c, group).python,
      }))
      .filter((item) => item.sides.length),
  };
}

/** (a) and (b) encode the same content canonically, so their bytes must be identical. */
function crossCheck(cases: readonly CaseResult[]): RunResults["crossCheck"] {
  return cases.flatMap((r) => {
    const { a, b } = r.sides;
    if (!a || !b) return [];
    const identical = a.bytes === b.bytes && a.sha256 === b.sha256;
    const detail = identical
      ? `${a.bytes} bytes, sha256 ${a.sha256?.slice(0, 16)}…`
      : `TypeScript ${a.bytes} bytes (sha256 ${a.sha256}), Python ${b.bytes} bytes (sha256 ${b.sha256})`;
    return [{ case: r.case.id, identical, detail }];
  });
}

function gitCommit(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: ROOT,
      encoding: "utf8",
    }).trim();
  } catch {
    return "unknown";
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
