import { status } from "@grpc/grpc-js";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
} from "../src";
import { callInputs, WorkerClient, WorkerError } from "../src/rpc";
import { range } from "./fixtures";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";
import { expectSummarized, floats } from "./summarize-outputs";

// Many calls in flight against a real worker, counted: the regression test of the hang of
// issue 28 (XLA's CPU client deadlocked when many threads ran functions over several devices;
// python/colocated_wire/worker/device_turn.py). Bounded by the number of calls, not by time.
jest.setTimeout(600_000);

const EXAMPLES = "colocated_wire.examples";
const IN_FLIGHT = 64;
const CALLS = 3_000;
/** Generous: a call that gets no answer in a minute is hung, not slow. */
const DEADLINE_MS = 60_000;

const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
const program = (name: string, leaves: ShapeDtypeStruct[]): Program => ({
  function: new FunctionRef(EXAMPLES, name),
  inputs: callInputs(leaves),
  devices: mesh.devices,
});
const f32 = (values: ArrayLike<number>) => new Uint8Array(Float32Array.from(values).buffer);

// affine over all 8 devices, as the user ran it: x float32[8, 256] on the 2x4 mesh.
const X = Float32Array.from(range(8 * 256), (i) => (i % 97) - 48);
const AFFINE = program("affine", [
  new ShapeDtypeStruct([8, 256], "float32", on("x", "y")),
  new ShapeDtypeStruct([], "float32", on()),
  new ShapeDtypeStruct([], "float32", on()),
]);
// summarize: five computations over the mesh per call, so more of them are in flight at once.
const SMALL = Float32Array.from(range(32), (i) => i - 15.5);
const SUMMARIZE = program("summarize", [
  new ShapeDtypeStruct([8, 4], "float32", on("x", "y")),
  new ShapeDtypeStruct([8, 4], "float32", on("x", "y")),
]);

/** The outcome of every call: answers checked, failures by status code. */
interface Tally {
  answered: number;
  failed: Map<string, number>;
}

/** Keeps `inFlight` calls going until `calls` have ended; checks every answer. */
async function keepCalling(client: WorkerClient, inFlight: number, calls: number): Promise<Tally> {
  const tally: Tally = { answered: 0, failed: new Map() };
  let started = 0;
  const lane = async () => {
    while (started < calls) {
      const n = started++;
      try {
        if (n % 2 === 0) {
          const scale = (n % 5) + 1;
          const { data } = await client.execute(AFFINE, [f32(X), f32([scale]), f32([n])], {
            deadlineMs: DEADLINE_MS,
          });
          expect(floats(data[0])).toEqual(X.map((v) => v * scale + n));
        } else {
          const { outputs, data } = await client.execute(
            SUMMARIZE,
            [f32(SMALL), f32(SMALL.map(() => 0.5))],
            {
              deadlineMs: DEADLINE_MS,
            },
          );
          expectSummarized(SMALL, outputs, data);
        }
        tally.answered++;
      } catch (error) {
        if (!(error instanceof WorkerError)) throw error;
        const code = status[error.code] ?? String(error.code);
        tally.failed.set(code, (tally.failed.get(code) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return tally;
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
  const tally = await keepCalling(client, IN_FLIGHT, CALLS);
  expect(Object.fromEntries(tally.failed)).toEqual({});
  expect(tally.answered).toBe(CALLS);
});

test(`${IN_FLIGHT} calls in flight against a worker of 16 slots wait in the client, and all answer`, async () => {
  const client = await WorkerClient.connect(defaults.target);
  clients.push(client);
  expect(client.limits?.maxConcurrentCalls).toBe(16);
  const tally = await keepCalling(client, IN_FLIGHT, CALLS / 2);
  expect(Object.fromEntries(tally.failed)).toEqual({});
  expect(tally.answered).toBe(CALLS / 2);
});
