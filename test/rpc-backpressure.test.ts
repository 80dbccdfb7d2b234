import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { ColocatedWorkerServiceClient, LoadProgramRequest } from "../gen/ts/colocated/v1/service";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
} from "../src";
import { callInputs, type ExecuteResult, WorkerClient, WorkerError } from "../src/rpc";
import { callCountProxy } from "./call-count-proxy";
import { range } from "./fixtures";
import { MATRIX, program, SCALAR } from "./mesh-programs";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startWorker,
  stopAllWorkers,
} from "./rpc-worker";

// Backpressure in the client: a WorkerClient keeps its calls within the limits the
// worker states in GetVersion and queues the rest, and gRPC retries a call the worker refused
// at admission. One real worker of --max-concurrent-calls 2. A call is held inside it by
// python/tests/worker_gate.py's `hold`, which returns once this test opens a FIFO: from
// outside, since with every slot held a call of examples.release would be refused itself.
// A proxy between client and worker counts the calls (and gRPC's attempts) that crossed it.
jest.setTimeout(120_000);

const EXAMPLES = "colocated_wire.examples";
const SLOTS = 2;
const LIMITS = `--max-concurrent-calls ${SLOTS}, --max-inflight-bytes ${1 << 30}`;
const HOLDING = "worker_gate: holding";
/** Generous: these calls wait for others, not for time. */
const DEADLINE_MS = 600_000;
const dir = mkdtempSync(join(tmpdir(), "colocated-wire-backpressure-"));
const GATE = join(dir, "gate");
const GATE_ENV = { PYTHONPATH: join(ROOT, "python", "tests"), WORKER_GATE: GATE };

let worker: RunningWorker;
const clients: WorkerClient[] = [];
const proxies: { close(): void }[] = [];

beforeAll(async () => {
  ensurePythonEnv();
  execFileSync("mkfifo", [GATE]);
  worker = await startWorker(
    [
      "--allow-module",
      EXAMPLES,
      "--allow-module",
      "worker_gate",
      "--max-concurrent-calls",
      String(SLOTS),
    ],
    60_000,
    GATE_ENV,
  );
}, 900_000);

afterAll(async () => {
  for (const client of clients) client.close();
  for (const proxy of proxies) proxy.close();
  await stopAllWorkers();
});

const affine = program(EXAMPLES, "affine", [MATRIX, SCALAR, SCALAR]);
// On one device: calls over several take the worker's one turn to run (worker/device_turn.py),
// so only one of them at a time would be inside `hold`.
const device0 = new Mesh(new DeviceList([0]), [1], ["x"]);
const hold: Program = {
  function: new FunctionRef("worker_gate", "hold"),
  inputs: callInputs([
    new ShapeDtypeStruct([8, 4], "float32", new NamedSharding(device0, new PartitionSpec())),
  ]),
  devices: device0.devices,
};
const X = range(32).map((i) => i - 10);

function f32(values: number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

function floats(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

async function connect(target: string): Promise<WorkerClient> {
  const client = await WorkerClient.connect(target, { deadlineMs: DEADLINE_MS });
  clients.push(client);
  return client;
}

/** A client whose calls go through a proxy that counts them. */
async function connectThroughProxy() {
  const proxy = await callCountProxy(worker.target);
  proxies.push(proxy);
  return { proxy, client: await connect(proxy.address) };
}

/** The rejection of a promise, which must be a WorkerError. */
async function refusal(promise: Promise<unknown>): Promise<WorkerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkerError);
  return error as WorkerError;
}

/** How many times the worker has written `text` to stderr. */
function said(text: string): number {
  return worker.stderr().split(text).length - 1;
}

/** Resolves once the worker has written `text` to stderr `count` times in all. */
function whenSaid(text: string, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (said(text) < count) return;
      stop();
      resolve();
    };
    const onExit = () => {
      stop();
      reject(new Error(`the worker exited before saying ${JSON.stringify(text)} ${count} times`));
    };
    const stop = () => {
      worker.process.stderr?.off("data", check);
      worker.process.off("exit", onExit);
    };
    worker.process.stderr?.on("data", check); // after spawnServer's, which keeps the text
    worker.process.on("exit", onExit);
    check();
  });
}

/** Takes every slot of the worker with calls of `client` that it holds; resolves once held. */
async function holdEverySlot(client: WorkerClient): Promise<Promise<ExecuteResult>[]> {
  const held = whenSaid(HOLDING, said(HOLDING) + SLOTS);
  const calls = range(SLOTS).map(() => client.execute(hold, [f32(X)], { deadlineMs: DEADLINE_MS }));
  const early = Promise.race(calls).then(
    () => "a call ended before every slot was held",
    (e: Error) => `a call failed before every slot was held: ${e.message}`,
  );
  expect(await Promise.race([held.then(() => "held"), early])).toBe("held");
  return calls;
}

/** Lets every call the gate holds return. */
function openGate(): Promise<void> {
  return writeFile(GATE, "");
}

test(`64 calls made at once from one client all answer, never more than ${SLOTS} in flight`, async () => {
  const { proxy, client } = await connectThroughProxy();
  expect(client.limits).toEqual({ maxConcurrentCalls: SLOTS, maxInflightBytes: 1 << 30 });
  const ks = range(64);
  const results = await Promise.all(
    ks.map((k) => client.execute(affine, [f32(X), f32([k]), f32([1])])),
  );
  let right = 0;
  results.forEach(({ data }, i) => {
    expect(floats(data[0])).toEqual(X.map((v) => v * ks[i] + 1));
    right += 1;
  });
  expect(right).toBe(64);
  expect(client.queuedCalls).toBe(0);
  expect(proxy.counts.mostInFlight).toBeLessThanOrEqual(SLOTS);
  // One attempt each, so the worker refused none: GetVersion, LoadProgram and the 64 calls.
  expect(proxy.counts.opened).toBe(2 + 64);
});

test("a call waiting behind held slots fails by its deadline or its abort, and is never sent", async () => {
  const { proxy, client } = await connectThroughProxy();
  const before = said(HOLDING);
  await client.loadProgram(hold);
  const held = await holdEverySlot(client);
  const sent = proxy.counts.opened;
  const abort = new AbortController();
  const late = refusal(client.execute(hold, [f32(X)], { deadlineMs: 1_000 }));
  const aborted = refusal(client.execute(hold, [f32(X)], { signal: abort.signal }));
  await new Promise(setImmediate); // both have reached the queue: their handle was loaded
  expect(client.queuedCalls).toBe(2);
  abort.abort();

  const cancelled = await aborted;
  expect(cancelled.code).toBe(status.CANCELLED);
  expect(cancelled.message).toBe(
    `Execute on ${proxy.address} failed: CANCELLED: the call waited in this client's queue for the worker's limits (${LIMITS}) and was never sent (the caller aborted it)`,
  );
  const expired = await late;
  expect(expired.code).toBe(status.DEADLINE_EXCEEDED);
  expect(expired.message).toBe(
    `Execute on ${proxy.address} failed: DEADLINE_EXCEEDED: the call waited in this client's queue for the worker's limits (${LIMITS}) and was never sent (no answer within 1000 ms)`,
  );
  expect(client.queuedCalls).toBe(0);
  expect(proxy.counts.opened).toBe(sent); // neither left the client

  await openGate();
  for (const call of held) expect(floats((await call).data[0])).toEqual(X);
  const { data } = await client.execute(affine, [f32(X), f32([2]), f32([0])]); // slots free again
  expect(floats(data[0])).toEqual(X.map((v) => 2 * v));
  expect(said(HOLDING) - before).toBe(SLOTS); // only the calls that ran were held
});

test("a call the worker refused at admission is retried by gRPC, and answers once the slots free", async () => {
  const { proxy, client } = await connectThroughProxy();
  await client.loadProgram(affine);
  const other = await connect(worker.target); // another client: its own queue, not this one's
  const held = await holdEverySlot(other);

  // A client without gRPC's retries sees the worker refuse at admission, before it reads the
  // request (this one has no program).
  const bare = new ColocatedWorkerServiceClient(worker.target, credentials.createInsecure(), {
    "grpc.enable_retries": 0,
  });
  const refused = await new Promise<ServiceError | null>((resolve) =>
    bare.loadProgram(LoadProgramRequest.fromPartial({ version: client.version }), (e) =>
      resolve(e),
    ),
  );
  bare.close();
  expect([refused?.code, refused?.details]).toEqual([
    status.RESOURCE_EXHAUSTED,
    `the worker is running ${SLOTS} calls, its limit (--max-concurrent-calls); retry later`,
  ]);

  const ended = proxy.counts.ended;
  const opened = proxy.counts.opened;
  const call = client.execute(affine, [f32(X), f32([3]), f32([1])]);
  await proxy.whenEnded(ended + 1); // its first attempt answered: with every slot held, refused
  await openGate();
  const { data } = await call;
  expect(floats(data[0])).toEqual(X.map((v) => 3 * v + 1));
  expect(proxy.counts.opened - opened).toBeGreaterThanOrEqual(2); // refused, then tried again
  for (const c of held) expect(floats((await c).data[0])).toEqual(X);
});

test("an ExecuteSharded call waits in the same queue, and streams once a slot frees", async () => {
  const { proxy, client } = await connectThroughProxy();
  await Promise.all([client.loadProgram(hold), client.loadProgram(affine)]);
  const held = await holdEverySlot(client);
  const sent = proxy.counts.opened;
  const call = client.executeSharded(affine, [Float32Array.from(X), f32([4]), f32([2])]);
  await new Promise(setImmediate); // it has reached the queue: its program was loaded
  expect([client.queuedCalls, proxy.counts.opened]).toEqual([1, sent]);
  await openGate();
  const { data } = await call;
  expect(floats(data[0])).toEqual(X.map((v) => 4 * v + 2));
  for (const c of held) expect(floats((await c).data[0])).toEqual(X);
});
