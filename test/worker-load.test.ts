import { status } from "@grpc/grpc-js";
import { WorkerClient, WorkerError } from "../src/rpc";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";
import { mixedCall } from "./support/soak-mix";

// Many calls in flight against a real worker, counted: the regression test of XLA's CPU client
// hang (it deadlocks when many threads run functions over several devices;
// python/colocated_wire/worker/device_turn.py), and the short soak of `npm run soak`, with its
// calls (test/support/soak-mix.ts: affine and summarize over 8 devices, every answer checked; a wrong
// one throws). Bounded by the number of calls, not by time.
jest.setTimeout(600_000);

const EXAMPLES = "colocated_wire.examples";
const IN_FLIGHT = 64;
const CALLS = 3_000;
/** Generous: a call that gets no answer in a minute is hung, not slow. */
const DEADLINE_MS = 60_000;

/** Keeps `inFlight` calls going until `calls` have ended; returns how many failed, by status. */
async function keepCalling(client: WorkerClient, inFlight: number, calls: number) {
  const failed = new Map<string, number>();
  let started = 0;
  let answered = 0;
  const lane = async () => {
    while (started < calls) {
      const n = started++;
      try {
        await mixedCall(client, n, { deadlineMs: DEADLINE_MS });
        answered++;
      } catch (error) {
        if (!(error instanceof WorkerError)) throw error; // a wrong answer fails the test
        const code = status[error.code] ?? String(error.code);
        failed.set(code, (failed.get(code) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { answered, failed: Object.fromEntries(failed) };
}

let worker: RunningWorker;
/** A worker left at its default --max-concurrent-calls (16): the client queues the rest. */
let defaults: RunningWorker;
const clients: WorkerClient[] = [];

beforeAll(async () => {
  ensurePythonEnv();
  // JAX takes a few seconds to start, so the workers start together.
  [defaults, worker] = await Promise.all([
    startWorker(["--allow-module", EXAMPLES]),
    startWorker(["--allow-module", EXAMPLES, "--max-concurrent-calls", String(IN_FLIGHT)]),
  ]);
}, 900_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await stopAllWorkers();
});

test(`${IN_FLIGHT} calls in flight over 8 devices answer ${CALLS} of ${CALLS}, each one right`, async () => {
  const client = await WorkerClient.connect(worker.target);
  clients.push(client);
  expect(await keepCalling(client, IN_FLIGHT, CALLS)).toEqual({ answered: CALLS, failed: {} });
});

test(`${IN_FLIGHT} calls in flight against a worker of 16 slots wait in the client, and all answer`, async () => {
  const client = await WorkerClient.connect(defaults.target);
  clients.push(client);
  expect(client.limits?.maxConcurrentCalls).toBe(16);
  const calls = CALLS / 2;
  expect(await keepCalling(client, IN_FLIGHT, calls)).toEqual({ answered: calls, failed: {} });
});
