import { status } from "@grpc/grpc-js";
import { DecodeError } from "../src";
import { GroupTopologyError, WorkerClient, WorkerError, WorkerGroup } from "../src/rpc";

import { mutate } from "./fuzz/mutate";
import { Prng } from "./fuzz/prng";
import { RecordingProxy, type ResponseFilter } from "./fuzz/rpc-proxy";
import { mutateCall, RawClient, type Replay } from "./fuzz/rpc-replay";
import { MATRIX, program } from "./mesh-programs";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";

// The RPC fuzz test: real calls of every method recorded through a proxy, then sent again
// changed (fuzz/rpc-replay.ts) to a live worker, which must answer each with a status and
// keep serving, with no call slot, byte or session place left taken. `npm test` sends a few
// hundred; `npm run fuzz` (FUZZ_CASES=100000) a fiftieth of FUZZ_CASES.
jest.setTimeout(900_000);

const CASES = process.env.FUZZ_CASES ? Number(process.env.FUZZ_CASES) / 50 : 300;
const SEED = 0x5eed_0c11;
const AT_ONCE = 4;
/** A call the worker has not answered in this long is hung. */
const DEADLINE_MS = 60_000;
const SESSIONS = 3;
/**
 * An abandoned stream's deadline. grpc-js may cancel a stream it has just written to without
 * the worker ever hearing of it (grpcio's context stays active), so the worker holds such a
 * session's place until its deadline, as it holds an idle session's (docs/performance-journal.md, wave 15).
 */
const ABANDONED_DEADLINE_MS = 3_000;
/** `npm run fuzz`: how much the worker's resident size may grow over the run. */
const MEMORY_BUDGET_MIB = 256;
const SERVICE = "/colocated.v1.ColocatedWorkerService/";

const AFFINE = program("colocated_wire.examples", "affine", [MATRIX, MATRIX, MATRIX]);
const X = Float32Array.from({ length: 32 }, (_, i) => i - 7);
const SCALE = new Float32Array(32).fill(3);
const SHIFT = new Float32Array(32).fill(0.5);
const bytesOf = (a: Float32Array) => new Uint8Array(a.buffer);

let worker: RunningWorker;
let metricsUrl: string;

beforeAll(async () => {
  ensurePythonEnv();
  worker = await startWorker([
    "--allow-module",
    "colocated_wire.examples",
    "--metrics-port",
    "0",
    "--max-sessions",
    String(SESSIONS),
  ]);
  const said = /metrics on (http:\S+)/.exec(worker.stderr());
  if (said === null)
    throw new Error(`the worker did not say where its metrics are:\n${worker.stderr()}`);
  metricsUrl = said[1];
}, 120_000);

afterAll(() => stopAllWorkers());

/** Real calls of every method, through the recording proxy. */
async function record(): Promise<RecordingProxy> {
  const proxy = await RecordingProxy.start(worker.target);
  const client = await WorkerClient.connect(proxy.address);
  try {
    await client.getTopology();
    await client.execute(AFFINE, [X, SCALE, SHIFT].map(bytesOf));
    await client.executeSharded(AFFINE, [X, SCALE, SHIFT]);
    for (const relayFanout of [0, 2]) {
      const group = await WorkerGroup.connect([proxy.address], { relayFanout });
      try {
        await group.executeSharded(AFFINE, [X, SCALE, SHIFT]);
      } finally {
        group.close();
      }
    }
  } finally {
    client.close();
  }
  return proxy;
}

/** How many sessions the worker counts open once --max-sessions of them are taken at once. */
async function sessionsTaken(): Promise<number> {
  const client = await WorkerClient.connect(worker.target);
  const sessions = Array.from({ length: SESSIONS }, () => client.openSession());
  try {
    await Promise.all(sessions.map((s) => s.whenTaken(DEADLINE_MS)));
    return (await gauges()).sessions_open;
  } finally {
    for (const s of sessions) s.close();
    client.close();
  }
}

/** The worker's resident size in bytes, as its metrics say. */
async function resident(): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = /^process_resident_memory_bytes (\S+)$/m.exec(text);
  if (line === null) throw new Error("no process_resident_memory_bytes in the metrics");
  return Number(line[1]);
}

/** The worker's in-flight gauges, by name. */
async function gauges(): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const found: Record<string, number> = {};
  for (const name of [
    "calls_in_flight",
    "request_bytes_in_flight",
    "calls_waiting_for_turn",
    "sessions_open",
  ]) {
    const line = new RegExp(`^colocated_worker_${name} (\\S+)$`, "m").exec(text);
    if (line === null) throw new Error(`no colocated_worker_${name} in the metrics`);
    found[name] = Number(line[1]);
  }
  return found;
}

test(`${CASES} changed calls of every method each end with a status, and the worker keeps serving with nothing left taken`, async () => {
  const proxy = await record();
  proxy.close();
  const methods = new Set(proxy.calls.map((c) => c.path.slice(SERVICE.length)));
  expect([...methods].sort()).toEqual([
    "Execute",
    "ExecuteSharded",
    "GetTopology",
    "GetVersion",
    "LoadProgram",
    "Relay",
    "Session",
  ]);
  const seeds = proxy.calls.filter((c) => c.requests.length > 0);
  const others = seeds.flatMap((c) => c.requests);
  const rng = new Prng(SEED);
  const residentBefore = await resident();
  const raw = new RawClient(worker.target);
  const byCode: Record<string, number> = {};
  const hung: Replay[] = [];
  let next = 0;
  const lane = async () => {
    while (next < CASES) {
      next++;
      const replay = mutateCall(seeds[rng.below(seeds.length)], others, rng);
      const end = await raw.send(replay, replay.abandon ? ABANDONED_DEADLINE_MS : DEADLINE_MS);
      const key = `${replay.path.slice(SERVICE.length)} ${status[end.code]}`;
      byCode[key] = (byCode[key] ?? 0) + 1;
      if (end.code === status.DEADLINE_EXCEEDED || end.code === status.INTERNAL) hung.push(replay);
    }
  };
  try {
    await Promise.all(Array.from({ length: AT_ONCE }, lane));
  } finally {
    raw.close();
  }
  process.stdout.write(`RPC fuzz, ${CASES} cases: ${JSON.stringify(byCode, null, 1)}\n`);
  expect(hung.map((r) => `${r.path} ${r.mutation}`)).toEqual([]);
  expect(Object.values(byCode).reduce((a, b) => a + b)).toBe(CASES);

  // It still answers a clean call, rightly, and says it serves.
  const client = await WorkerClient.connect(worker.target);
  try {
    const { data } = await client.execute(AFFINE, [X, SCALE, SHIFT].map(bytesOf));
    expect(Array.from(new Float32Array(data[0].buffer, data[0].byteOffset, 32))).toEqual(
      Array.from(X, (v) => v * 3 + 0.5),
    );
    const health = await new RawClient(worker.target).send(
      {
        path: "/grpc.health.v1.Health/Check",
        requestStream: false,
        requests: [Buffer.alloc(0)],
        abandon: false,
        mutation: "none",
      },
      DEADLINE_MS,
    );
    expect(health.code).toBe(status.OK);
    expect(health.last).toEqual(Buffer.from([0x08, 0x01])); // HealthCheckResponse SERVING
  } finally {
    client.close();
  }
  // No call slot, byte or session place stays counted once the calls have ended, or their
  // deadlines passed (read a bounded number of times as the last ones end).
  let last: Record<string, number> = {};
  for (let i = 0; i < 20_000; i++) {
    last = await gauges();
    if (Object.values(last).every((v) => v === 0)) break;
  }
  expect(last).toEqual({
    calls_in_flight: 0,
    request_bytes_in_flight: 0,
    calls_waiting_for_turn: 0,
    sessions_open: 0,
  });
  // And every place is there to take: as many sessions as --max-sessions at once, counted.
  expect(await sessionsTaken()).toBe(SESSIONS);
  // The long run's budget: the worker's memory stays bounded (JAX's caches of the programs
  // the mutated calls made it compile included).
  const grownMiB = ((await resident()) - residentBefore) / 2 ** 20;
  process.stdout.write(`worker resident size grew ${grownMiB.toFixed(1)} MiB\n`);
  if (process.env.FUZZ_CASES) expect(grownMiB).toBeLessThan(MEMORY_BUDGET_MIB);
});

const CLIENT_CASES = process.env.FUZZ_CASES ? Number(process.env.FUZZ_CASES) / 100 : 80;
const CLIENT_DEADLINE_MS = 2_000;
/** Guard bytes around the caller's output buffer, which no answer may touch. */
const GUARD = 64;
const GUARD_BYTE = 0xab;

/** Whether `error` is one the library means its callers to meet. */
function isLibraryError(error: unknown): boolean {
  return (
    error instanceof WorkerError ||
    error instanceof DecodeError ||
    error instanceof GroupTopologyError
  );
}

test(`${CLIENT_CASES} calls whose answers a fake worker changes each settle with a result or one of the library's errors, writing nothing outside the caller's buffers`, async () => {
  const recorded = await record();
  recorded.close();
  const answers = recorded.calls.flatMap((c) => c.responses);
  const proxy = await RecordingProxy.start(worker.target);
  const rng = new Prng(SEED + 1);
  const options = { deadlineMs: CLIENT_DEADLINE_MS };
  const memory = new Uint8Array(32 * 4 + 2 * GUARD).fill(GUARD_BYTE);
  const into = memory.subarray(GUARD, GUARD + 32 * 4);
  const inputs = [X, SCALE, SHIFT];
  const calls: Record<string, () => Promise<unknown>> = {
    connect: async () => (await WorkerClient.connect(proxy.address, options)).close(),
    getTopology: () => withClient((c) => c.getTopology()),
    execute: () => withClient((c) => c.execute(AFFINE, inputs.map(bytesOf))),
    executeSharded: () => withClient((c) => c.executeSharded(AFFINE, inputs, { into: [into] })),
    session: () => withGroup(0, (g) => g.executeSharded(AFFINE, inputs, { into: [into] })),
    relay: () => withGroup(2, (g) => g.executeSharded(AFFINE, inputs, { into: [into] })),
  };
  async function withClient(call: (c: WorkerClient) => Promise<unknown>) {
    proxy.filter = (_p, _i, b) => b; // connect as it is, then change the call's answers
    const client = await WorkerClient.connect(proxy.address, options);
    try {
      proxy.filter = changed;
      return await call(client);
    } finally {
      client.close();
    }
  }
  async function withGroup(relayFanout: number, call: (g: WorkerGroup) => Promise<unknown>) {
    proxy.filter = (_p, _i, b) => b;
    const group = await WorkerGroup.connect([proxy.address], { ...options, relayFanout });
    try {
      proxy.filter = changed;
      return await call(group);
    } finally {
      group.close();
    }
  }
  let target = 0;
  let changed: ResponseFilter = (_p, _i, b) => b;
  const settled: Record<string, number> = {};
  const wrong: string[] = [];
  const names = Object.keys(calls);
  for (let n = 0; n < CLIENT_CASES; n++) {
    const name = names[rng.below(names.length)];
    target = rng.below(3);
    const drop = rng.below(8) === 0;
    changed = (_p, i, b) => {
      if (i !== target) return b;
      return drop ? null : Buffer.from(mutate(b, answers, rng));
    };
    proxy.filter = changed;
    try {
      await calls[name]();
      settled[`${name} answered`] = (settled[`${name} answered`] ?? 0) + 1;
    } catch (error) {
      if (!isLibraryError(error)) wrong.push(`${name}: ${String(error)}`);
      const kind = error instanceof Error ? error.constructor.name : typeof error;
      settled[`${name} ${kind}`] = (settled[`${name} ${kind}`] ?? 0) + 1;
    }
    const touched = [...memory.subarray(0, GUARD), ...memory.subarray(GUARD + into.length)].some(
      (b) => b !== GUARD_BYTE,
    );
    if (touched) wrong.push(`${name}: bytes outside the caller's buffer were written`);
  }
  proxy.close();
  process.stdout.write(`client fuzz, ${CLIENT_CASES} cases: ${JSON.stringify(settled, null, 1)}\n`);
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(Object.values(settled).reduce((a, b) => a + b)).toBe(CLIENT_CASES);
});
