import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
} from "../src";
import { type Compression, callInputs, WorkerClient } from "../src/rpc";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";
import { countingProxy } from "./support/load-proxy";

// gRPC gzip, negotiated: the client asks for compressed responses, and the worker answers
// compressed unless started with --compression none. A proxy between them counts the bytes that
// really cross the connection, each way. Requests: grpc-js 1.14 compresses only a channel's first
// call to a grpcio worker (it splits grpcio's "identity, deflate, gzip" on "," without trimming,
// so " gzip" never matches; grpc-go had the same bug, grpc/grpc-go#6951), and the first call is
// the version handshake.
jest.setTimeout(60_000);

let worker: RunningWorker;
let plainOnly: RunningWorker;
const closers: (() => void)[] = [];

beforeAll(async () => {
  ensurePythonEnv();
  const flags = ["--allow-module", "colocated_wire.examples"];
  [worker, plainOnly] = await Promise.all([
    startWorker(flags),
    startWorker([...flags, "--compression", "none"]),
  ]);
}, 900_000);

afterAll(async () => {
  for (const close of closers) close();
  await stopAllWorkers();
});

/** Bytes that crossed a proxy: up from the client to the worker, down back. */
const mesh = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
/** affine(x, scale, shift) on a 1 MiB array of zeros: as compressible as data can be. */
const N = 512;
const program = {
  function: new FunctionRef("colocated_wire.examples", "affine"),
  inputs: callInputs([
    new ShapeDtypeStruct([N, N], "float32", on("x", "y")),
    new ShapeDtypeStruct([], "float32", on()),
    new ShapeDtypeStruct([], "float32", on()),
  ]),
  devices: mesh.devices,
};
const MIB = 1024 * 1024;

/** Runs the program once through a counting proxy; the counts and the output's bytes. */
async function callThroughProxy(target: string, compression: Compression) {
  const { address, counts, close } = await countingProxy(target);
  closers.push(close);
  const client = await WorkerClient.connect(address, { compression, deadlineMs: 30_000 });
  try {
    const scalar = (v: number) => new Uint8Array(Float32Array.of(v).buffer);
    const { data } = await client.execute(program, [
      new Uint8Array(N * N * 4),
      scalar(3),
      scalar(1),
    ]);
    return { counts, output: data[0] };
  } finally {
    client.close();
  }
}

function expectAllOnes(bytes: Uint8Array) {
  const values = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  expect(values.length).toBe(N * N);
  expect(values.every((v) => v === 1)).toBe(true);
}

describe("gzip between the client and the worker", () => {
  test("off by default: a MiB of zeros crosses the wire as a MiB, both ways", async () => {
    const { counts, output } = await callThroughProxy(worker.target, "none");
    expectAllOnes(output);
    expect(counts.up).toBeGreaterThan(MIB);
    expect(counts.down).toBeGreaterThan(MIB);
  });

  test("asked for: the responses cross compressed", async () => {
    const { counts, output } = await callThroughProxy(worker.target, "gzip");
    expectAllOnes(output);
    expect(counts.down).toBeLessThan(MIB / 16);
  });

  test("a worker started with --compression none answers plain even when asked", async () => {
    const { counts, output } = await callThroughProxy(plainOnly.target, "gzip");
    expectAllOnes(output);
    expect(counts.down).toBeGreaterThan(MIB);
  });

  test("an unknown compression is a TypeError before any call", async () => {
    await expect(
      WorkerClient.connect(worker.target, { compression: "zstd" as Compression }),
    ).rejects.toThrow('compression is "gzip" or "none", not "zstd"');
  });
});
