import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { Command } from "commander";
import { reportDir, writeRawResults } from "../common/output";
import { runDrain } from "./soak-drain";
import { runFaults } from "./soak-faults";
import { runGroup } from "./soak-group";
import { type PartContext, plannedSeconds, soakPlan } from "./soak-plan";
import { soakMarkdown } from "./soak-report";
import { runRestarts } from "./soak-restarts";
import type { SoakResults } from "./soak-results";
import { runSteady } from "./soak-steady";
import { soakTargets } from "./soak-targets";

/**
 * `npm run soak`: calls under load and faults against real worker processes
 * on 127.0.0.1, in five parts (steady load with memory, SIGKILL and restart, a faulty proxy,
 * SIGTERM under load, a WorkerGroup of two workers as one JAX job with sessions), each
 * counting calls answered, failed by status and hung. Writes
 * soak.json and soak.md, and exits 1 when a target is missed. See docs/benchmarks.md, "Soak".
 */

const ROOT = path.resolve(__dirname, "..", "..", "..");
const PARTS = {
  steady: runSteady,
  restarts: runRestarts,
  faults: runFaults,
  drain: runDrain,
  group: runGroup,
};
type Part = keyof typeof PARTS;

interface Options {
  quick: boolean;
  parts: string;
  seed: number;
  out?: string;
}

async function main(): Promise<void> {
  const options = new Command("soak")
    .description("calls under load and faults against real colocated workers on 127.0.0.1")
    .option("--quick", "every part shorter: about two and a half minutes in all", false)
    .option("--parts <list>", "the parts to run, comma-separated", Object.keys(PARTS).join(","))
    .option("--seed <n>", "seed of the faulty proxy's plan", Number, 28)
    .option(
      "--out <dir>",
      "where soak.json and soak.md go (default bench/, or out/bench when partial)",
    )
    .parse()
    .opts<Options>();
  const parts = options.parts.split(",").map((p) => p.trim()) as Part[];
  const unknown = parts.filter((p) => !(p in PARTS));
  if (unknown.length)
    throw new Error(`no part ${unknown.join(", ")}: ${Object.keys(PARTS).join(", ")}`);
  // Only a full run of every part stands for the project: others go to out/bench unless told.
  const partial = options.quick || parts.length < Object.keys(PARTS).length;
  const outDir = path.resolve(options.out ?? path.join(ROOT, partial ? "out/bench" : "bench"));
  execFileSync("bash", [path.join(ROOT, "scripts", "python-env.sh")], { stdio: "inherit" });

  const plan = soakPlan(options.quick);
  const started = Date.now();
  const loadBefore = os.loadavg()[0];
  let line = () => "starting";
  const bar = new SingleBar(
    {
      format: "soak {bar} {value}/{total} s | {task}",
      noTTYOutput: true, // in a log, a line every 10 s
      notTTYSchedule: 10_000,
    },
    Presets.shades_classic,
  );
  bar.start(plannedSeconds(plan), 0, { task: "starting" });
  const ticker = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    if (seconds > bar.getTotal()) bar.setTotal(seconds);
    bar.update(seconds, { task: line() });
  }, 1_000);
  const context: PartContext = {
    root: ROOT,
    plan,
    seed: options.seed,
    status: (next) => {
      line = next;
    },
  };
  const results: Omit<SoakResults, "targets" | "meta"> = { errors: {} };
  try {
    for (const part of parts) {
      line = () => `${part}: starting the worker`;
      try {
        Object.assign(results, { [part]: await PARTS[part](context) });
      } catch (error) {
        results.errors[part] = error instanceof Error ? error.message : String(error);
        process.stderr.write(`\nsoak ${part}: ${results.errors[part]}\n`);
      }
    }
  } finally {
    clearInterval(ticker);
    bar.stop();
  }

  const meta: SoakResults["meta"] = {
    date: new Date(started).toISOString(),
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    versions: versions(),
    quick: options.quick,
    seed: options.seed,
    seconds: Math.round((Date.now() - started) / 1000),
    loadAverage: { before: loadBefore, after: os.loadavg()[0] },
    plan,
  };
  const run: SoakResults = { meta, ...results, targets: [] };
  run.targets = soakTargets(run);
  const report = soakMarkdown(run);
  const raw = writeRawResults(ROOT, "soak", run);
  const dir = reportDir(outDir, "soak");
  writeFileSync(path.join(dir, "soak.md"), `# colocated-wire soak\n\n${report}\n`);
  console.log(report);
  console.log(`\nWrote soak.md to ${dir} and the raw results to ${raw} (${meta.seconds} s).`);
  // Unlike `npm run bench`, the soak is a test of the worker and client: a missed target fails it.
  const missed = run.targets.filter((t) => !t.met);
  if (missed.length) {
    console.error(
      `\n*** soak: ${missed.length} target(s) missed: ${missed.map((t) => `${t.part}: ${t.name}`).join("; ")} ***`,
    );
    process.exitCode = 1;
  }
}

/** Node's, Python's and JAX's versions, as the worker runs them. */
function versions(): string {
  try {
    const python = path.join(ROOT, ".venv", "bin", "python");
    const script = "import platform, jax; print(platform.python_version(), jax.__version__)";
    const [py, jax] = execFileSync(python, ["-c", script], { encoding: "utf8" }).trim().split(" ");
    return `Node ${process.version}, Python ${py}, JAX ${jax}`;
  } catch {
    return `Node ${process.version}`;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
