import { ExecuteRequest } from "../gen/ts/colocated/v1/service";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
} from "../src";
import { callInputs, type WorkerClient } from "../src/rpc";
import { ownCpuMs, processCpuMs } from "./load-cpu";
import type { EchoClient } from "./load-echo";

/** Calls at one concurrency: how many per second, and their latency percentiles. */
export interface LatencyRow {
  concurrency: number;
  calls: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU per call of the server process (undefined without /proc) and of this client. */
  serverCpuMs?: number;
  clientCpuMs: number;
}

/** A round trip of `bytes` each way, and how long it took. */
export interface Throughput {
  bytes: number;
  seconds: number;
  /** Bytes moved (both ways) per second. */
  bytesPerSecond: number;
}

const mesh = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
const SCALAR = new ShapeDtypeStruct([], "float32", on());

/** affine(x, scale, shift) = x * scale + shift, with x a float32 [rows, cols] on the 2x4 mesh. */
export function affineProgram(rows: number, cols: number): Program {
  const x = new ShapeDtypeStruct([rows, cols], "float32", on("x", "y"));
  return {
    function: new FunctionRef("colocated_wire.examples", "affine"),
    inputs: callInputs([x, SCALAR, SCALAR]),
    devices: mesh.devices,
  };
}

const scalar = (v: number) => new Uint8Array(Float32Array.of(v).buffer);

/**
 * affine on a float32 [8, 4] on one device: the small program of the load bench. One device,
 * because the bench measures what a call costs beyond its function, and JAX's eager ops cost
 * about 3x more on an array sharded over eight CPU devices than on one.
 */
function smallProgram(): Program {
  const one = new SingleDeviceSharding(0);
  const spec = (shape: number[]) => new ShapeDtypeStruct(shape, "float32", one);
  return {
    function: new FunctionRef("colocated_wire.examples", "affine"),
    inputs: callInputs([spec([8, 4]), spec([]), spec([])]),
    devices: new DeviceList([0]),
  };
}

/** The small program of the load bench, and its inputs. */
export const SMALL = {
  program: smallProgram(),
  inputs: [new Uint8Array(128), scalar(2), scalar(1)],
};

/** The bytes of an Execute by handle of the small program, as the worker receives them. */
export function smallRequestBytes(version: number, handle: Uint8Array): Uint8Array {
  const inputs = SMALL.inputs.map((data) => ({ data }));
  return ExecuteRequest.encode({ version, handle: { digest: handle }, inputs }).finish();
}

/** Calls made before any is measured: enough for V8 to have compiled the client's code. */
const WARM_UP_CALLS = 100;

/** Makes `calls` calls, `concurrency` at a time, after a warm-up (WARM_UP_CALLS, or twice the
 * concurrency), to a server whose process is `serverPid`. */
export async function callsAt(
  concurrency: number,
  calls: number,
  call: () => Promise<unknown>,
  serverPid?: number,
): Promise<LatencyRow> {
  await runConcurrently(concurrency, Math.max(WARM_UP_CALLS, concurrency * 2), call);
  const server0 = serverPid === undefined ? undefined : processCpuMs(serverPid);
  const client0 = ownCpuMs();
  const started = performance.now();
  const latencies = await runConcurrently(concurrency, calls, call);
  const seconds = (performance.now() - started) / 1000;
  const clientCpuMs = (ownCpuMs() - client0) / calls;
  const server1 = serverPid === undefined ? undefined : processCpuMs(serverPid);
  const serverCpuMs =
    server0 === undefined || server1 === undefined ? undefined : (server1 - server0) / calls;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  const callsPerSecond = calls / seconds;
  return {
    concurrency,
    calls,
    callsPerSecond,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    serverCpuMs,
    clientCpuMs,
  };
}

async function runConcurrently(
  concurrency: number,
  calls: number,
  call: () => Promise<unknown>,
): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const loop = async () => {
    while (next < calls) {
      next++;
      const t0 = performance.now();
      await call();
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return latencies;
}

/** The array of the round trip: float32 [rows, 4096] of pseudo-random values in [-0.5, 0.5). */
export function bigArray(bytes: number): { rows: number; data: Float32Array } {
  const cols = 4096;
  const rows = bytes / 4 / cols;
  if (!Number.isInteger(rows) || rows % 8 !== 0)
    throw new RangeError(`${bytes} B is no whole shape`);
  const data = new Float32Array(rows * cols);
  let x = 2463534242; // xorshift32: as little compressible as trained weights, and fast
  for (let i = 0; i < data.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data[i] = (x >>> 0) / 2 ** 32 - 0.5;
  }
  return { rows, data };
}

/** One round trip of the array through the worker's ExecuteSharded (affine x*1+0: x back). */
export async function workerRoundTrip(client: WorkerClient, array: Float32Array, rows: number) {
  const program = affineProgram(rows, 4096);
  const started = performance.now();
  const { data } = await client.executeSharded(program, [array, scalar(1), scalar(0)], {
    deadlineMs: 600_000,
  });
  const seconds = (performance.now() - started) / 1000;
  const back = new Float32Array(data[0].buffer, data[0].byteOffset, data[0].byteLength / 4);
  for (const i of [0, 1, array.length >> 1, array.length - 1]) {
    if (back[i] !== array[i]) throw new Error(`the round trip changed element ${i}`);
  }
  return throughput(array.byteLength, seconds);
}

/** The same bytes through the echo's stream, in chunks of the sharded call's size. */
export async function echoRoundTrip(echo: EchoClient, array: Float32Array, chunkBytes: number) {
  const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  const started = performance.now();
  const received = await echo.echoStream(bytes, chunkBytes);
  const seconds = (performance.now() - started) / 1000;
  if (received !== bytes.length)
    throw new Error(`the echo gave back ${received} of ${bytes.length} B`);
  return throughput(bytes.length, seconds);
}

function throughput(bytes: number, seconds: number): Throughput {
  return { bytes, seconds, bytesPerSecond: (2 * bytes) / seconds };
}
