import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { WorkerClient } from "../src/rpc";
import {
  bigArray,
  callsInTurns,
  echoRoundTrip,
  type LatencyRow,
  SMALL,
  smallRequestBytes,
  type Throughput,
  workerRoundTrip,
} from "./load-calls";
import { type CompressionRow, measureCompression } from "./load-compression";
import { EchoClient } from "./load-echo";
import { startEcho, startWorker, stop } from "./load-servers";

/**
 * The load bench (issue 14 item 7): the real worker beside a plain gRPC echo of the same bytes on
 * the same machine, the limit to approach. Part of `npm run bench`; alone, `node dist/bench/load.js
 * [--quick]`.
 */

export const CONCURRENCY = [1, 8, 64];
/**
 * Calls a side (at least 20 per concurrent call) and the turns they are split into. Many
 * calls in many turns: with 200-call turns, one stall of this shared machine decided a ratio.
 */
const FULL_CALLS = { calls: 3000, turns: 6 };
const QUICK_CALLS = { calls: 200, turns: 2 };
const GIB = 2 ** 30;
/** The sharded call's chunk size (DEFAULT_CHUNK_BYTES), which the echo's stream uses too. */
const CHUNK_BYTES = 1 << 20;

export interface LoadTarget {
  name: string;
  /** Worker against echo: time per call (≤ limit), or throughput (≥ limit). */
  ratio: number;
  limit: number;
  met: boolean;
}

export interface LoadResults {
  small: { requestBytes: number; worker: LatencyRow[]; echo: LatencyRow[] };
  array: { chunkBytes: number; worker: Throughput; echo: Throughput };
  compression: CompressionRow[];
  targets: LoadTarget[];
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
      const handle = await client.loadProgram(SMALL.program);
      const request = smallRequestBytes(client.version, handle);
      const small = {
        requestBytes: request.length,
        worker: [] as LatencyRow[],
        echo: [] as LatencyRow[],
      };
      for (const concurrency of CONCURRENCY) {
        progress(`load: small program, ${concurrency} at once`);
        const { calls, turns } = quick ? QUICK_CALLS : FULL_CALLS;
        const [w, e] = await callsInTurns(concurrency, Math.max(calls, 20 * concurrency), turns, [
          {
            call: () => client.execute(SMALL.program, SMALL.inputs),
            serverPid: worker.process.pid,
          },
          { call: () => echoClient.echo(request), serverPid: echo.process.pid },
        ]);
        small.worker.push(w);
        small.echo.push(e);
      }
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
      return { small, array, compression, targets: loadTargets(small, array) };
    } finally {
      client.close();
      echoClient.close();
    }
  } finally {
    await Promise.all([stop(worker), stop(echo)]);
  }
}

function fastest(runs: Throughput[]): Throughput {
  return runs.reduce((a, b) => (b.bytesPerSecond > a.bytesPerSecond ? b : a));
}

/** Per-call time at most 2× the echo's at every concurrency; array throughput at least half. */
function loadTargets(small: LoadResults["small"], array: LoadResults["array"]): LoadTarget[] {
  const perCall = small.worker.map((w, i) => {
    const ratio = small.echo[i].callsPerSecond / w.callsPerSecond;
    return {
      name: `time per call, ${w.concurrency} at once (× echo)`,
      ratio,
      limit: 2,
      met: ratio <= 2,
    };
  });
  const ratio = array.worker.bytesPerSecond / array.echo.bytesPerSecond;
  const name = `array round trip, ${array.worker.bytes / 2 ** 20} MiB (bytes/s, × echo)`;
  return [...perCall, { name, ratio, limit: 0.5, met: ratio >= 0.5 }];
}

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
const mibs = (v: number) => `${(v / 2 ** 20).toFixed(0)} MiB/s`;
const x = (v: number) => `${v.toFixed(2)}×`;

/** The load bench's results as markdown: calls, the array, targets, gzip. */
export function loadMarkdown(r: LoadResults): string {
  const lines = [
    `Small program: \`colocated_wire.examples.affine\` on float32[8, 4] on one CPU device (Execute by handle, ${r.small.requestBytes} B per request) against an echo of the same request bytes. The two take turns (${FULL_CALLS.turns} each, or ${QUICK_CALLS.turns} with --quick; ${FULL_CALLS.calls} calls a side, or ${QUICK_CALLS.calls}) so that a machine that slows down midway slows both.`,
    "",
    "| at once | worker calls/s | echo calls/s | time per call × echo | worker p50 / p99 ms | echo p50 / p99 ms | p50 × echo |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...r.small.worker.map((w, i) => {
      const e = r.small.echo[i];
      return `| ${w.concurrency} | ${w.callsPerSecond.toFixed(0)} | ${e.callsPerSecond.toFixed(0)} | ${x(e.callsPerSecond / w.callsPerSecond)} | ${ms(w.p50Ms)} / ${ms(w.p99Ms)} | ${ms(e.p50Ms)} / ${ms(e.p99Ms)} | ${x(w.p50Ms / e.p50Ms)} |`;
    }),
    "",
    "CPU per call, where the time goes: the server process (all its threads) and the client (this Node process), in ms.",
    "",
    "| at once | worker process | echo process | × echo | client of the worker | client of the echo |",
    "| --- | --- | --- | --- | --- | --- |",
    ...r.small.worker.map((w, i) => {
      const e = r.small.echo[i];
      const server = (v?: number) => (v === undefined ? "n/a" : v.toFixed(3));
      const ratio =
        w.serverCpuMs === undefined || e.serverCpuMs === undefined
          ? "n/a"
          : x(w.serverCpuMs / e.serverCpuMs);
      return `| ${w.concurrency} | ${server(w.serverCpuMs)} | ${server(e.serverCpuMs)} | ${ratio} | ${w.clientCpuMs.toFixed(3)} | ${e.clientCpuMs.toFixed(3)} |`;
    }),
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
        `| ${t.name} | ${x(t.ratio)} | ${t.limit === 2 ? "≤" : "≥"} ${x(t.limit)} | ${t.met ? "yes" : "**no**"} |`,
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

const START = "<!-- load-bench:start -->";
const END = "<!-- load-bench:end -->";

/** Replaces the README's load section (between its markers) with these results. */
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

/** Measures, writes load.json and load.md to `outDir`, and (if asked) the README's section. */
export async function runLoadSection(
  root: string,
  outDir: string,
  options: { quick: boolean; readme: boolean; progress?: (task: string) => void },
): Promise<LoadResults> {
  const results = await measureLoad(root, options.quick, options.progress);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, "load.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(
    path.join(outDir, "load.md"),
    `# colocated-wire load bench\n\n${loadMarkdown(results)}\n`,
  );
  if (options.readme) {
    const cpus = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}`;
    const note = `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus}, load average ${os.loadavg()[0].toFixed(1)}.`;
    updateLoadReadme(path.join(root, "README.md"), results, note);
  }
  return results;
}

if (require.main === module) {
  const root = path.resolve(__dirname, "..", "..");
  const quick = process.argv.includes("--quick");
  const outDir = path.join(root, quick ? "out/bench" : "bench");
  runLoadSection(root, outDir, { quick, readme: !quick, progress: (t) => console.error(t) })
    .then((r) => console.log(loadMarkdown(r)))
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    });
}
