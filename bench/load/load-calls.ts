import { ExecuteRequest } from "../../gen/ts/colocated/v1/service";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
} from "../../src";
import { callInputs, type WorkerClient } from "../../src/rpc";
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

/** A program of the load bench and its inputs. */
export interface LoadProgram {
  program: Program;
  inputs: Uint8Array[];
}

/** The small program of the load bench, and its inputs. */
export const SMALL: LoadProgram = {
  program: smallProgram(),
  inputs: [new Uint8Array(128), scalar(2), scalar(1)],
};

/**
 * affine on three float32 [8, 4] sharded over both axes of the 2x4 mesh: the multi-device
 * program, what colocated Python runs (a function over the CPU devices of a host), where the
 * worker's protection of XLA's CPU client applies (worker/device_turn.py).
 */
export const MULTI: LoadProgram = {
  program: {
    function: new FunctionRef("colocated_wire.examples", "affine"),
    inputs: callInputs(Array(3).fill(new ShapeDtypeStruct([8, 4], "float32", on("x", "y")))),
    devices: mesh.devices,
  },
  inputs: [f32Full(32, 1), f32Full(32, 2), f32Full(32, 3)],
};

function f32Full(length: number, value: number): Uint8Array {
  return new Uint8Array(new Float32Array(length).fill(value).buffer);
}

/** The bytes of an Execute by handle of a program, as the worker receives them. */
export function requestBytes(version: number, handle: Uint8Array, of: LoadProgram): Uint8Array {
  const inputs = of.inputs.map((data) => ({ data }));
  return ExecuteRequest.encode({ version, handle: { digest: handle }, inputs }).finish();
}

/** Calls made before any is measured: enough for V8 to have compiled the client's code. */
const WARM_UP_CALLS = 500;

/** One side of a comparison: how to make a call, and the server process that answers it. */
export interface CallSide {
  call: () => Promise<unknown>;
  serverPid?: number;
}

/**
 * Makes `calls` calls on each side, `concurrency` at a time, after a warm-up (WARM_UP_CALLS, or
 * twice the concurrency). The sides take `turns` turns each, in alternation, so that a shared
 * machine that slows down midway slows every side alike, not the one measured at that moment.
 */
export async function callsInTurns(
  concurrency: number,
  calls: number,
  turns: number,
  sides: CallSide[],
): Promise<LatencyRow[]> {
  for (const side of sides) {
    await runConcurrently(concurrency, Math.max(WARM_UP_CALLS, concurrency * 2), side.call);
  }
  const perTurn = Math.ceil(calls / turns);
  const spent = sides.map(() => ({ latencies: [] as number[], ms: 0, serverMs: 0, clientMs: 0 }));
  for (let turn = 0; turn < turns; turn++) {
    for (const [i, side] of sides.entries()) {
      const server0 = serverCpuMs(side);
      const client0 = ownCpuMs();
      const started = performance.now();
      spent[i].latencies.push(...(await runConcurrently(concurrency, perTurn, side.call)));
      spent[i].ms += performance.now() - started;
      spent[i].clientMs += ownCpuMs() - client0;
      spent[i].serverMs += serverCpuMs(side) - server0;
    }
  }
  return spent.map(({ latencies, ms, serverMs, clientMs }) => {
    const made = latencies.length;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(made - 1, Math.floor(q * made))];
    return {
      concurrency,
      calls: made,
      callsPerSecond: made / (ms / 1000),
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      serverCpuMs: Number.isNaN(serverMs) ? undefined : serverMs / made,
      clientCpuMs: clientMs / made,
    };
  });
}

/** The side's server CPU time so far (ms), NaN where /proc cannot tell. */
function serverCpuMs(side: CallSide): number {
  return side.serverPid === undefined ? Number.NaN : (processCpuMs(side.serverPid) ?? Number.NaN);
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
export async function workerRoundTrip(
  client: WorkerClient,
  array: Float32Array,
  rows: number,
  into: Uint8Array,
) {
  const program = affineProgram(rows, 4096);
  const started = performance.now();
  const { data } = await client.executeSharded(program, [array, scalar(1), scalar(0)], {
    deadlineMs: 600_000,
    into: [into],
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
