import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
} from "../src";
import { callInputs, WorkerClient, WorkerGroup } from "../src/rpc";
import { startJob } from "./group-job";

/**
 * The group bench (issue 15): one call over one, two and four workers, each a process of
 * 8 / N CPU devices, as one JAX job for two and four, against the same call on one worker
 * with WorkerClient. Part of `npm run bench` (full runs, or `--filter group`); alone,
 * `node dist/bench/group.js [--quick]`.
 */

/** The job's devices, whatever the number of workers. */
const DEVICES = 8;
export const WORKERS = [1, 2, 4];

/** Median milliseconds per call of one kind, over a number of calls one at a time. */
export interface CallTime {
  calls: number;
  p50Ms: number;
}

/** One job: its workers, and each call's time on it through a WorkerGroup. */
export interface GroupRow {
  workers: number;
  devicesPerWorker: number;
  small: CallTime;
  array: CallTime;
}

export interface GroupResults {
  arrayBytes: number;
  /** The 1-worker job called with WorkerClient.executeSharded, no group in between. */
  direct: { small: CallTime; array: CallTime };
  rows: GroupRow[];
}

/** The programs on the job's 8 devices, in jax.devices() order, as a 2×4 mesh. */
function programs(ids: number[], side: number) {
  const mesh = new Mesh(new DeviceList(ids), [2, 4], ["x", "y"]);
  const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
  const f32 = (shape: number[], ...spec: (string | null)[]) =>
    new ShapeDtypeStruct(shape, "float32", on(...spec));
  const program = (name: string, args: ShapeDtypeStruct[]): Program => ({
    function: new FunctionRef("colocated_wire.examples", name),
    inputs: callInputs(args),
    devices: mesh.devices,
  });
  const x = Float32Array.from({ length: 32 }, (_, i) => i - 10);
  const big = Float32Array.from({ length: side * side }, (_, i) => i % 1000);
  return {
    // summarize's count_positive is a jnp.sum over both processes: a cross-process collective.
    small: {
      program: program("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]),
      inputs: [x, x],
    },
    array: {
      program: program("affine", [f32([side, side], "x", "y"), f32([]), f32([side], "y")]),
      inputs: [big, Float32Array.of(2), new Float32Array(side)],
    },
  };
}

type Call = () => Promise<unknown>;

/**
 * The median time of each of `calls` calls, made one at a time after three of each to warm
 * up; with several, they take turns, so that none pays alone for a busy moment.
 */
async function time(each: Call[], calls: number): Promise<CallTime[]> {
  for (let i = 0; i < 3; i++) for (const call of each) await call();
  const times = each.map(() => [] as number[]);
  for (let i = 0; i < calls; i++) {
    for (const [k, call] of each.entries()) {
      const start = performance.now();
      await call();
      times[k].push(performance.now() - start);
    }
  }
  return times.map((t) => {
    t.sort((a, b) => a - b);
    return { calls, p50Ms: t[Math.floor(t.length / 2)] };
  });
}

/**
 * Starts each job in turn and times the two calls through a group; on the one-worker job,
 * in turns with the same calls made with WorkerClient (no group).
 */
export async function measureGroup(
  root: string,
  quick: boolean,
  progress: (task: string) => void = () => {},
): Promise<GroupResults> {
  const side = quick ? 512 : 1024;
  const counts = quick ? { small: 20, array: 5 } : { small: 100, array: 20 };
  const rows: GroupRow[] = [];
  let direct: GroupResults["direct"] | undefined;
  for (const workers of WORKERS) {
    const devicesPerWorker = DEVICES / workers;
    progress(`group: starting ${workers} workers of ${devicesPerWorker} CPU devices`);
    const job = await startJob(root, workers, devicesPerWorker);
    try {
      const group = await WorkerGroup.connect(job.targets, { deadlineMs: 600_000 });
      const client =
        workers === 1
          ? await WorkerClient.connect(job.targets[0], { deadlineMs: 600_000 })
          : undefined;
      try {
        const ids = group.topology.devices.map((d) => d.id);
        const { small, array } = programs(ids, side);
        progress(`group: calls over ${workers} workers`);
        const timed = async (call: { program: Program; inputs: Float32Array[] }) =>
          time(
            [
              () => group.executeSharded(call.program, call.inputs),
              ...(client ? [() => client.executeSharded(call.program, call.inputs)] : []),
            ],
            call === small ? counts.small : counts.array,
          );
        const [groupSmall, directSmall] = await timed(small);
        const [groupArray, directArray] = await timed(array);
        rows.push({ workers, devicesPerWorker, small: groupSmall, array: groupArray });
        if (client) direct = { small: directSmall, array: directArray };
      } finally {
        group.close();
        client?.close();
      }
    } finally {
      await job.stop();
    }
  }
  return { arrayBytes: side * side * 4, direct: direct as GroupResults["direct"], rows };
}

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
const x = (v: number) => `${v.toFixed(2)}×`;

/** The group bench's results as markdown. */
export function groupMarkdown(r: GroupResults): string {
  const [one] = r.rows;
  const mib = r.arrayBytes / 2 ** 20;
  return [
    `One call over a JAX job of ${DEVICES} CPU devices, split into 1, 2 and 4 worker processes (one job, jax.distributed with gloo, for 2 and 4), through a WorkerGroup; median ms per call, one at a time. Small: \`summarize\` on float32[8, 4] (its \`count_positive\` is a reduction across the processes). Array: \`affine\` on a ${mib} MiB float32 array each way, sharded over all devices. "× 1 worker" is the fan-out's overhead; on ${os.cpus().length} cores, more processes than cores also share the CPU.`,
    "",
    `| workers × devices | small ms | × 1 worker | ${mib} MiB ms | × 1 worker |`,
    "| --- | --- | --- | --- | --- |",
    ...r.rows.map(
      (row) =>
        `| ${row.workers} × ${row.devicesPerWorker} | ${ms(row.small.p50Ms)} | ${x(row.small.p50Ms / one.small.p50Ms)} | ${ms(row.array.p50Ms)} | ${x(row.array.p50Ms / one.array.p50Ms)} |`,
    ),
    `| 1 × ${DEVICES}, WorkerClient (no group) | ${ms(r.direct.small.p50Ms)} | ${x(r.direct.small.p50Ms / one.small.p50Ms)} | ${ms(r.direct.array.p50Ms)} | ${x(r.direct.array.p50Ms / one.array.p50Ms)} |`,
  ].join("\n");
}

/** Whether a bench run includes the group bench: full runs, and any run whose --filter names "group". */
export function groupWanted(quick: boolean, filter?: string): boolean {
  if (filter !== undefined) return filter.split(",").includes("group");
  return !quick;
}

/** Measures, and writes group.json and group.md to `outDir`. */
export async function runGroupSection(
  root: string,
  outDir: string,
  options: { quick: boolean; progress?: (task: string) => void },
): Promise<GroupResults> {
  const results = await measureGroup(root, options.quick, options.progress);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, "group.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(
    path.join(outDir, "group.md"),
    `# colocated-wire group bench\n\n${groupMarkdown(results)}\n`,
  );
  return results;
}

if (require.main === module) {
  const root = path.resolve(__dirname, "..", "..");
  const quick = process.argv.includes("--quick");
  const outDir = path.join(root, quick ? "out/bench" : "bench");
  runGroupSection(root, outDir, { quick, progress: (t) => console.error(t) })
    .then((r) => console.log(groupMarkdown(r)))
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    });
}
