import { gunzipSync, gzipSync } from "node:zlib";
import { encodeSpecs } from "../../src/index";
import { type Compression, WorkerClient } from "../../src/rpc";
import { buildSpecs } from "../../test/support/build-specs";
import { countingProxy } from "../../test/support/load-proxy";
import {
  type Case,
  deviceIds,
  s1Cases,
  s2Cases,
  trainingCases,
} from "../../test/support/scenarios";
import { measure, median } from "../common/measure";
import { affineProgram, bigArray, SMALL } from "./load-calls";
import { EchoClient } from "./load-echo";

/** What gRPC's gzip does to one payload: its size, gzip's size and the time it costs. */
export interface CompressionRow {
  scenario: string;
  bytes: number;
  /** Size after gzip at zlib's default level, which grpc-js and grpcio use. */
  gzipBytes: number;
  /** gzip and gunzip of the payload in this process, median. */
  gzipMs: number;
  gunzipMs: number;
  /** Milliseconds per call and bytes on the wire per call, without and with gzip. */
  wire: Record<Compression, { msPerCall: number; bytesPerCall: number }>;
}

const CALLS = 20;

/** Every spec scenario's payload through the echo, and the worker's own calls, with and without gzip. */
export async function measureCompression(
  echoTarget: string,
  workerTarget: string,
  arrayBytes: number,
): Promise<CompressionRow[]> {
  const rows: CompressionRow[] = [];
  const cases: Case[] = [...s1Cases(), ...s2Cases(), ...trainingCases()];
  for (const c of cases) {
    const { treedef, leaves } = buildSpecs(c, deviceIds(c));
    const payload = encodeSpecs(treedef, leaves);
    const wire = await both((compression) => echoCalls(echoTarget, compression, payload));
    rows.push({ scenario: `${c.id} specs`, ...sizes(payload), wire });
  }
  const small = await both((compression) =>
    workerCalls(workerTarget, compression, (client) => client.execute(SMALL.program, SMALL.inputs)),
  );
  rows.push({
    scenario: "small program call (inputs)",
    ...sizes(concat(SMALL.inputs)),
    wire: small,
  });
  const { rows: arrayRows, data } = bigArray(arrayBytes);
  const program = affineProgram(arrayRows, 4096);
  const one = new Uint8Array(Float32Array.of(1).buffer);
  const zero = new Uint8Array(4);
  const array = await both((compression) =>
    workerCalls(
      workerTarget,
      compression,
      (client) => client.executeSharded(program, [data, one, zero], { deadlineMs: 600_000 }),
      2,
    ),
  );
  const scenario = `array round trip, ${arrayBytes >> 20} MiB of random floats`;
  const sample = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  rows.push({ scenario, ...sizes(sample), wire: array });
  return rows;
}

function sizes(payload: Uint8Array) {
  const gz = measure(() => gzipSync(payload));
  const gunzip = measure(() => gunzipSync(gz.result));
  return {
    bytes: payload.length,
    gzipBytes: gz.result.length,
    gzipMs: gz.timing.medianMs,
    gunzipMs: gunzip.timing.medianMs,
  };
}

async function both<T>(
  run: (compression: Compression) => Promise<T>,
): Promise<Record<Compression, T>> {
  return { none: await run("none"), gzip: await run("gzip") };
}

/** `calls` echoes of the payload through a counting proxy; ms and wire bytes per call. */
async function echoCalls(target: string, compression: Compression, payload: Uint8Array) {
  const proxy = await countingProxy(target);
  const echo = new EchoClient(proxy.address, compression);
  try {
    await echo.echo(payload); // the channel connects
    return await timedCalls(proxy.counts, () => echo.echo(payload), CALLS);
  } finally {
    echo.close();
    proxy.close();
  }
}

async function workerCalls(
  target: string,
  compression: Compression,
  call: (client: WorkerClient) => Promise<unknown>,
  calls = CALLS,
) {
  const proxy = await countingProxy(target);
  const client = await WorkerClient.connect(proxy.address, { compression, deadlineMs: 600_000 });
  try {
    await call(client); // loads the program and compiles it
    return await timedCalls(proxy.counts, () => call(client), calls);
  } finally {
    client.close();
    proxy.close();
  }
}

async function timedCalls(
  counts: { up: number; down: number },
  call: () => Promise<unknown>,
  calls: number,
) {
  const before = counts.up + counts.down;
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return { msPerCall: median(times), bytesPerCall: (counts.up + counts.down - before) / calls };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
