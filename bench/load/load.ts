import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { WorkerClient } from "../../src/rpc";
import { reportDir, writeRawResults } from "../common/output";
import {
  bigArray,
  callsInTurns,
  echoRoundTrip,
  type LatencyRow,
  type LoadProgram,
  MULTI,
  requestBytes,
  SMALL,
  type Throughput,
  workerRoundTrip,
} from "./load-calls";
import { type CompressionRow, measureCompression } from "./load-compression";
import { EchoClient } from "./load-echo";
import { fasterInProcess, type InProcessRow, measureInProcess } from "./load-inprocess";
import { type Served, startEcho, startWorker, stop } from "./load-servers";

/**
 * The load bench: the real worker beside a plain gRPC echo of the same bytes on
 * the same machine, the limit to approach. Part of `npm run bench`; alone, `node dist/bench/load/load.js
 * [--quick]`.
 */

export const CONCURRENCY = [1, 8, 64];
/**
 * Calls a side (at least 20 per concurrent call) and the turns they are split into. Many
 * calls in many turns: with 200-call turns, one stall of this shared machine decided a ratio,
 * and with 500-call turns (70 ms of the echo's at 8 at once) the echo's rate moved between
 * 4,300 and 7,300 calls/s from turn to turn, a run's ratio by ±15%.
 */
const FULL_CALLS = { calls: 12_000, turns: 12 };
const QUICK_CALLS = { calls: 200, turns: 2 };
const GIB = 2 ** 30;
/** The sharded call's chunk size (DEFAULT_CHUNK_BYTES), which the echo's stream uses too. */
const CHUNK_BYTES = 1 << 20;

export interface LoadTarget {
  name: string;
  /** Worker against its limit (the echo, or the same JAX work in-process). */
  ratio: number;
  limit: number;
  /** Whether the ratio must be at most the limit (time) or at least it (throughput). */
  atMost: boolean;
  met: boolean;
}

/** One program's calls at every concurrency, beside the echo of the same request bytes. */
export interface ProgramRows {
  requestBytes: number;
  worker: LatencyRow[];
  echo: LatencyRow[];
}

export interface LoadResults {
  small: ProgramRows;
  /** The 8-device program, and the same JAX work in-process: serial, and protected threads. */
  multi: ProgramRows & { inProcess: InProcessRow[] };
  array: { chunkBytes: number; worker: Throughput; echo: Throughput };
  compression: CompressionRow[];
  targets: LoadTarget[];
  /** The worker's allocator as its start-up line says it (worker/memory.py). */
  allocator: string;
}

/** Starts a worker and an echo server, measures, and stops them. */
export async function measureLoad(
  root: string,
  quick: boolean,
  progress: (task: string) => void = () => {},
): Promise<LoadResults> {
  progress("load: starting the worker and the echo server");
  const [worker, echo] = await Promise.all([startWorker(root), startEcho(root)]);
  try {
    const client = await WorkerClient.connect(worker.target, { deadlineMs: 600_000 });
    const echoClient = new EchoClient(echo.target, "none");
    try {
      const { calls, turns } = quick ? QUICK_CALLS : FULL_CALLS;
      const rowsOf = async (name: string, of: LoadProgram): Promise<ProgramRows> => {
        const handle = await client.loadProgram(of.program);
        const request = requestBytes(client.version, handle, of);
        const rows: ProgramRows = { requestBytes: request.length, worker: [], echo: [] };
        for (const concurrency of CONCURRENCY) {
          progress(`load: ${name}, ${concurrency} at once`);
          const [w, e] = await callsInTurns(concurrency, Math.max(calls, 20 * concurrency), turns, [
            { call: () => client.execute(of.program, of.inputs), serverPid: worker.process.pid },
            { call: () => echoClient.echo(request), serverPid: echo.process.pid },
          ]);
          rows.worker.push(w);
          rows.echo.push(e);
        }
        return rows;
      };
      const small = await rowsOf("small program", SMALL);
      // The same JAX work in-process before and after the worker's calls; the faster of the two
      // is the limit, so that a busy moment of this machine cannot lower it.
      progress("load: the 8-device program in-process");
      const before = await measureInProcess(root, calls);
      const multiRows = await rowsOf("8-device program", MULTI);
      progress("load: the 8-device program in-process, again");
      const inProcess = fasterInProcess(before, await measureInProcess(root, calls));
      const multi = { ...multiRows, inProcess };
      const bytes = quick ? GIB / 4 : GIB;
      progress(`load: a ${bytes / 2 ** 20} MiB array round trip`);
      const { rows, data } = bigArray(bytes);
      // Best of two, alternating, so that neither side pays alone for a busy moment.
      const runs = { worker: [] as Throughput[], echo: [] as Throughput[] };
      // The result lands in one buffer, reused as a training loop would (ShardedOptions.into).
      const into = new Uint8Array(data.byteLength);
      // One untimed round trip each first: a training loop's steady state, not its first step.
      await workerRoundTrip(client, data, rows, into);
      await echoRoundTrip(echoClient, data, CHUNK_BYTES);
      for (let i = 0; i < 2; i++) {
        runs.worker.push(await workerRoundTrip(client, data, rows, into));
        runs.echo.push(await echoRoundTrip(echoClient, data, CHUNK_BYTES));
      }
      const array = {
        chunkBytes: CHUNK_BYTES,
        worker: fastest(runs.worker),
        echo: fastest(runs.echo),
      };
      progress("load: gzip on every scenario");
      const compression = await measureCompression(
        echo.target,
        worker.target,
        quick ? 16 << 20 : 64 << 20,
      );
      const targets = loadTargets(small, multi, array);
      return { small, multi, array, compression, targets, allocator: allocatorOf(worker) };
    } finally {
      client.close();
      echoClient.close();
    }
  } finally {
    await Promise.all([stop(worker), stop(echo)]);
  }
}

/** The allocator a worker serves with: the last part of its start-up line (worker/main.py). */
function allocatorOf(worker: Served): string {
  const line = worker
    .stderr()
    .split("\n")
    .find((l) => l.includes(" CPU devices ("));
  if (line === undefined) throw new Error(`the worker said no start-up line:\n${worker.stderr()}`);
  return line.slice(line.lastIndexOf(", ") + 2);
}

function fastest(runs: Throughput[]): Throughput {
  return runs.reduce((a, b) => (b.bytesPerSecond > a.bytesPerSecond ? b : a));
}

/**
 * The small program's time per call at most 2× the echo's at every concurrency; the 8-device
 * program at 8 and 64 at once at least 0.7 of the in-process serial rate, and at 1 at once the
 * worker's own time (its time per call less the in-process JAX time) at most 1.5× the echo's;
 * the array's throughput at least half the echo's.
 */
function loadTargets(
  small: ProgramRows,
  multi: LoadResults["multi"],
  array: LoadResults["array"],
): LoadTarget[] {
  const perCall = small.worker.map((w, i) =>
    target(
      `small program, time per call, ${w.concurrency} at once (× echo)`,
      small.echo[i].callsPerSecond / w.callsPerSecond,
      2,
      true,
    ),
  );
  const serial = serialRow(multi.inProcess);
  const multiTargets = multi.worker.flatMap((w, i) => {
    if (w.concurrency === 1) {
      const own = 1000 / w.callsPerSecond - serial.msPerCall;
      const echoMs = 1000 / multi.echo[i].callsPerSecond;
      const name = "8-device program, 1 at once: time per call less in-process JAX (× echo)";
      return [target(name, own / echoMs, 1.5, true)];
    }
    const name = `8-device program, ${w.concurrency} at once (calls/s × in-process serial)`;
    return [target(name, w.callsPerSecond / serial.callsPerSecond, 0.7, false)];
  });
  const ratio = array.worker.bytesPerSecond / array.echo.bytesPerSecond;
  const name = `array round trip, ${array.worker.bytes / 2 ** 20} MiB (bytes/s, × echo)`;
  return [...perCall, ...multiTargets, target(name, ratio, 0.5, false)];
}

function target(name: string, ratio: number, limit: number, atMost: boolean): LoadTarget {
  return { name, ratio, limit, atMost, met: atMost ? ratio <= limit : ratio >= limit };
}

function serialRow(rows: InProcessRow[]): InProcessRow {
  const serial = rows.find((r) => r.threads === 1);
  if (serial === undefined) throw new Error("the in-process run has no serial (1 thread) row");
  return serial;
}

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
const mibs = (v: number) => `${(v / 2 ** 20).toFixed(0)} MiB/s`;
const x = (v: number) => `${v.toFixed(2)}×`;

/** The load bench's results as markdown: calls, the array, targets, gzip. */
export function loadMarkdown(r: LoadResults): string {
  const serial = serialRow(r.multi.inProcess);
  const lines = [
    `The worker, the echo and the in-process runs all use the worker's allocator (worker/memory.py): ${r.allocator}.`,
    "",
    `Small program: \`colocated_wire.examples.affine\` on float32[8, 4] on one CPU device (Execute by handle, ${r.small.requestBytes} B per request) against an echo of the same request bytes. The two take turns (${FULL_CALLS.turns} each, or ${QUICK_CALLS.turns} with --quick; ${FULL_CALLS.calls} calls a side, or ${QUICK_CALLS.calls}) so that a machine that slows down midway slows both.`,
    "",
    ...callsTable(r.small),
    "",
    `8-device program: \`affine\` on three float32[8, 4] sharded over the 2x4 mesh of 8 CPU devices (${r.multi.requestBytes} B per request), what colocated Python runs; the worker launches such functions one call at a time (worker/device_turn.py). The same JAX work in-process (bench/load/load_inprocess.py: place the input bytes, run, wait, read the outputs back), the faster of a run before and one after the worker's calls:`,
    "",
    "| in-process threads | calls/s | ms a call |",
    "| --- | --- | --- |",
    ...r.multi.inProcess.map(
      (p) => `| ${p.threads} | ${p.callsPerSecond.toFixed(0)} | ${p.msPerCall.toFixed(3)} |`,
    ),
    "",
    ...callsTable(r.multi),
    "",
    "| at once | worker calls/s × in-process serial | worker ms a call less in-process JAX | × echo ms a call |",
    "| --- | --- | --- | --- |",
    ...r.multi.worker.map((w, i) => {
      const own = 1000 / w.callsPerSecond - serial.msPerCall;
      const echoMs = 1000 / r.multi.echo[i].callsPerSecond;
      return `| ${w.concurrency} | ${x(w.callsPerSecond / serial.callsPerSecond)} | ${ms(own)} | ${x(own / echoMs)} |`;
    }),
    "",
    "CPU per call, where the time goes: the server process (all its threads) and the client (this Node process), in ms.",
    "",
    "| program | at once | worker process | echo process | × echo | client of the worker | client of the echo |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...cpuRows("small", r.small),
    ...cpuRows("8 devices", r.multi),
    "",
    `Array round trip: float32 [${r.array.worker.bytes / 4 / 4096}, 4096] (${r.array.worker.bytes / 2 ** 20} MiB) there and back with ExecuteSharded in ${r.array.chunkBytes / 2 ** 20} MiB chunks into one output buffer reused from run to run, against a streaming echo of the same bytes in the same chunks; bytes/s counts both ways, best of two after one untimed round trip each.`,
    "",
    "| | seconds | bytes/s |",
    "| --- | --- | --- |",
    `| worker | ${r.array.worker.seconds.toFixed(2)} | ${mibs(r.array.worker.bytesPerSecond)} |`,
    `| echo | ${r.array.echo.seconds.toFixed(2)} | ${mibs(r.array.echo.bytesPerSecond)} |`,
    "",
    "| load target | measured | limit | met |",
    "| --- | --- | --- | --- |",
    ...r.targets.map(
      (t) =>
        `| ${t.name} | ${x(t.ratio)} | ${t.atMost ? "≤" : "≥"} ${x(t.limit)} | ${t.met ? "yes" : "**no**"} |`,
    ),
    "",
    "gRPC gzip (`compression: \"gzip\"`), per scenario: the payload's size and gzip's (zlib's default level, as gRPC uses), gzip and gunzip time in Node, and per call the median time and the bytes on the wire both ways (through a counting proxy; spec payloads through the echo, the others through the worker). grpc-js compresses only a channel's first request to a grpcio server, so on the wire gzip applies to responses.",
    "",
    "| scenario | bytes | gzip bytes | gzip / gunzip ms | ms per call, none → gzip | wire bytes per call, none → gzip |",
    "| --- | --- | --- | --- | --- | --- |",
    ...r.compression.map(
      (c) =>
        `| ${c.scenario} | ${c.bytes} | ${c.gzipBytes} (${((100 * c.gzipBytes) / c.bytes).toFixed(0)}%) | ${ms(c.gzipMs)} / ${ms(c.gunzipMs)} | ${ms(c.wire.none.msPerCall)} → ${ms(c.wire.gzip.msPerCall)} | ${c.wire.none.bytesPerCall.toFixed(0)} → ${c.wire.gzip.bytesPerCall.toFixed(0)} |`,
    ),
  ];
  return lines.join("\n");
}

function callsTable(rows: ProgramRows): string[] {
  return [
    "| at once | worker calls/s | echo calls/s | time per call × echo | worker p50 / p99 ms | echo p50 / p99 ms | p50 × echo |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.worker.map((w, i) => {
      const e = rows.echo[i];
      return `| ${w.concurrency} | ${w.callsPerSecond.toFixed(0)} | ${e.callsPerSecond.toFixed(0)} | ${x(e.callsPerSecond / w.callsPerSecond)} | ${ms(w.p50Ms)} / ${ms(w.p99Ms)} | ${ms(e.p50Ms)} / ${ms(e.p99Ms)} | ${x(w.p50Ms / e.p50Ms)} |`;
    }),
  ];
}

function cpuRows(program: string, rows: ProgramRows): string[] {
  const server = (v?: number) => (v === undefined ? "n/a" : v.toFixed(3));
  return rows.worker.map((w, i) => {
    const e = rows.echo[i];
    const ratio =
      w.serverCpuMs === undefined || e.serverCpuMs === undefined
        ? "n/a"
        : x(w.serverCpuMs / e.serverCpuMs);
    return `| ${program} | ${w.concurrency} | ${server(w.serverCpuMs)} | ${server(e.serverCpuMs)} | ${ratio} | ${w.clientCpuMs.toFixed(3)} | ${e.clientCpuMs.toFixed(3)} |`;
  });
}

const START = "<!-- load-bench:start -->";
const END = "<!-- load-bench:end -->";

/** Replaces docs/benchmarks.md's load section (between its markers) with these results. */
export function updateLoadReadme(readme: string, r: LoadResults, note: string): void {
  const text = readFileSync(readme, "utf8");
  const [a, b] = [text.indexOf(START), text.indexOf(END)];
  if (a < 0 || b < a) throw new Error(`${readme} has no ${START} ... ${END} section`);
  const body = `${START}\n${note}\n\n${loadMarkdown(r)}\n${END}`;
  writeFileSync(readme, text.slice(0, a) + body + text.slice(b + END.length));
}

/** Whether a bench run includes the load bench: full runs, and any run whose --filter names "load". */
export function loadWanted(quick: boolean, filter?: string): boolean {
  if (filter !== undefined) return filter.split(",").includes("load");
  return !quick;
}

/** Measures, writes load.md to `outDir`/load (the raw results to out/bench/load.json), and (if asked) its section of docs/benchmarks.md. */
export async function runLoadSection(
  root: string,
  outDir: string,
  options: { quick: boolean; readme: boolean; progress?: (task: string) => void },
): Promise<LoadResults> {
  const results = await measureLoad(root, options.quick, options.progress);
  writeRawResults(root, "load", results);
  writeFileSync(
    path.join(reportDir(outDir, "load"), "load.md"),
    `# colocated-wire load bench\n\n${loadMarkdown(results)}\n`,
  );
  if (options.readme) {
    const cpus = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}`;
    const note = `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus}, load average ${os.loadavg()[0].toFixed(1)}.`;
    updateLoadReadme(path.join(root, "docs", "benchmarks.md"), results, note);
  }
  return results;
}

if (require.main === module) {
  const root = path.resolve(__dirname, "..", "..", "..");
  const quick = process.argv.includes("--quick");
  const outDir = path.join(root, quick ? "out/bench" : "bench");
  runLoadSection(root, outDir, { quick, readme: !quick, progress: (t) => console.error(t) })
    .then((r) => console.log(loadMarkdown(r)))
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    });
}
