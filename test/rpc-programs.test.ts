import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, status } from "@grpc/grpc-js";
import { ColocatedWorkerServiceClient, type ExecuteRequest } from "../gen/ts/colocated/v1/service";
import { encodeProgram } from "../src";
import { WorkerClient, WorkerError } from "../src/rpc";
import { range } from "./fixtures";
import { MATRIX, program, SCALAR } from "./mesh-programs";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startWorker,
  stopAllWorkers,
  whenStderrSays,
} from "./rpc-worker";

// Programs loaded once and called by handle, limits and cancellation, on real Python workers.
// A call is held inside the worker by python/tests/worker_gate.py's `hold`, which returns once
// this test opens a FIFO for writing: no test waits for time.
jest.setTimeout(60_000);

const EXAMPLES = "colocated_wire.examples";
const dir = mkdtempSync(join(tmpdir(), "colocated-wire-programs-"));
const GATE = join(dir, "gate");
const GATE_ENV = { PYTHONPATH: join(ROOT, "python", "tests"), WORKER_GATE: GATE };

/** Keeps one lifted program: every second program evicts the first. */
let cache: RunningWorker;
/** Runs one call at a time, and may hold it. */
let gated: RunningWorker;
const clients: WorkerClient[] = [];

async function connect(worker: RunningWorker): Promise<WorkerClient> {
  const client = await WorkerClient.connect(worker.target);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  ensurePythonEnv();
  execFileSync("mkfifo", [GATE]);
  [cache, gated] = await Promise.all([
    startWorker(["--allow-module", EXAMPLES, "--program-cache", "1"]),
    startWorker(
      ["--allow-module", EXAMPLES, "--allow-module", "worker_gate", "--max-concurrent-calls", "1"],
      60_000,
      GATE_ENV,
    ),
  ]);
}, 900_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await stopAllWorkers();
});

const affine = program(EXAMPLES, "affine", [MATRIX, SCALAR, SCALAR]);
const summarize = program(EXAMPLES, "summarize", [MATRIX, MATRIX]);
const hold = program("worker_gate", "hold", [MATRIX]);

function f32(values: number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

function floats(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

const X = range(32).map((i) => i - 10);

/** affine(X, k, 1) on `client`, checked. */
async function checkAffine(client: WorkerClient, k: number): Promise<void> {
  const { data } = await client.execute(affine, [f32(X), f32([k]), f32([1])]);
  expect(floats(data[0])).toEqual(X.map((v) => v * k + 1));
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

/** Lets every call the gate holds return. */
function openGate(): Promise<void> {
  return writeFile(GATE, "");
}

/** Starts a call of `hold` and resolves with its promise once the worker holds it. */
async function heldCall(client: WorkerClient, options = {}) {
  const holding = whenStderrSays(gated, "worker_gate: holding");
  const call = client.execute(hold, [f32(X)], { deadlineMs: 600_000, ...options });
  const early = call.then(
    () => "the call ended before it was held",
    (e: Error) => `the call failed before it was held: ${e.message}`,
  );
  expect(await Promise.race([holding.then(() => "held"), early])).toBe("held");
  return { call };
}

describe("programs loaded once", () => {
  test("a program is loaded once, named by the SHA-256 of its bytes, then called by handle", async () => {
    const client = await connect(cache);
    const handle = await client.loadProgram(affine);
    const bytes = encodeProgram(affine, { targetMinorVersion: client.version });
    expect(Buffer.from(handle).toString("hex")).toBe(
      createHash("sha256").update(bytes).digest("hex"),
    );
    for (const k of [1, 2, 3]) await checkAffine(client, k);
    expect(client.programLoads).toBe(1);
  });

  test("the worker answers a handle it does not hold with NOT_FOUND", async () => {
    const stub = new ColocatedWorkerServiceClient(cache.target, credentials.createInsecure());
    const request: ExecuteRequest = {
      version: 0,
      handle: { digest: new Uint8Array(32).fill(7) },
      inputs: [],
    };
    const error = await new Promise<{ code: number; details: string }>((resolve) =>
      stub.execute(request, (e) => resolve(e as unknown as { code: number; details: string })),
    );
    stub.close();
    expect(error.code).toBe(status.NOT_FOUND);
    expect(error.details).toBe(
      "program handle 0707070707070707… is not loaded on this worker (never loaded, evicted from" +
        " its 1 most recent programs, or loaded before a restart): call LoadProgram again",
    );
  });

  test("an evicted program is loaded again transparently", async () => {
    const client = await connect(cache);
    await checkAffine(client, 2);
    const { data } = await client.execute(summarize, [f32(X), f32(X)]); // evicts affine
    expect(floats(data[1])).toEqual(X.map((v) => 2 * v));
    await checkAffine(client, 3); // NOT_FOUND, loaded again, called again
    await checkAffine(client, 4);
    expect(client.programLoads).toBe(3);
  });

  test("a handle from before a restart is loaded again transparently", async () => {
    const flags = ["--allow-module", EXAMPLES];
    const before = await startWorker(flags);
    const client = await connect(before);
    await checkAffine(client, 5);
    const exited = once(before.process, "exit");
    before.process.kill("SIGTERM");
    expect(await exited).toEqual([0, null]); // drained, then exit 0
    const port = before.target.split(":").pop() as string;
    await startWorker([...flags, "--port", port]);
    await checkAffine(client, 6);
    expect(client.programLoads).toBe(2);
  }, 120_000);
});

describe("limits and cancellation", () => {
  test("another client's call beyond --max-concurrent-calls is refused once gRPC's retries are spent", async () => {
    const client = await connect(gated);
    const { call } = await heldCall(client);
    // A client of its own: the first one's queue would hold the call back rather than send it.
    const other = await connect(gated);
    const error = await refusal(other.execute(affine, [f32(X), f32([1]), f32([1])]));
    expect(error.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error.message).toMatch(
      /^LoadProgram on \S+ failed: RESOURCE_EXHAUSTED: the worker is running 1 calls, its limit \(--max-concurrent-calls\); retry later$/,
    );
    await openGate();
    expect(floats((await call).data[0])).toEqual(X);
  });

  test("an aborted call is cancelled, and the worker stops its work", async () => {
    const client = await connect(gated);
    const controller = new AbortController();
    const { call } = await heldCall(client, { signal: controller.signal });
    const stopped = whenStderrSays(gated, "its work stopped");
    const seen = whenStderrSays(gated, "a call ended before its answer");
    controller.abort();
    const error = await refusal(call);
    expect(error.code).toBe(status.CANCELLED);
    expect(error.message).toMatch(/\(the caller aborted it\)$/);
    await seen; // the worker has seen the cancellation before the held work goes on
    await openGate();
    await stopped;
    await checkAffine(client, 7); // its one slot is free again
  });
});
