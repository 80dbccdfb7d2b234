import { join } from "node:path";
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
import { arrayByteLength, callInputs, WorkerClient } from "../src/rpc";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startWorker,
  stopAllWorkers,
} from "./rpc-worker";

// A TypeScript client calls the real Python worker with a PRNG key array and float0: a key
// travels as its uint32 key data, float0 as no bytes (python/tests/test_worker_keys.py has more).
jest.setTimeout(30_000);

const FUNCTIONS = "key_functions"; // python/tests/key_functions.py
const ONE = new SingleDeviceSharding(0);
const FRY = { impl: "threefry2x32", keyShape: [2] };

let worker: RunningWorker;
let client: WorkerClient;

beforeAll(async () => {
  ensurePythonEnv();
  const env = { PYTHONPATH: join(ROOT, "python", "tests") };
  worker = await startWorker(["--allow-module", FUNCTIONS], 60_000, env);
  client = await WorkerClient.connect(worker.target);
}, 900_000);

afterAll(async () => {
  client?.close();
  await stopAllWorkers();
});

function program(
  qualname: string,
  args: ShapeDtypeStruct[],
  devices: readonly number[] = [0],
): Program {
  return {
    function: new FunctionRef(FUNCTIONS, qualname),
    inputs: callInputs(args),
    devices: new DeviceList(devices),
  };
}

const MESH = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const ROWS = new NamedSharding(MESH, new PartitionSpec("x"));

const words = (bytes: Uint8Array) =>
  Array.from(new Uint32Array(bytes.slice().buffer, 0, bytes.length / 4));

test("a key array goes in and comes out as its key data, its spec a key dtype", async () => {
  const key = new ShapeDtypeStruct([], "key", ONE, { keyType: FRY });
  const keyData = new Uint8Array(new Uint32Array([0, 0]).buffer); // jax.random.key(0)
  const { outputs, data } = await client.execute(program("split_key", [key]), [keyData]);
  const { leaves } = outputs;
  expect(leaves[0].dtypeString).toBe("key<fry>");
  expect(leaves[0].shape).toEqual([2]);
  expect(data[0].length).toBe(arrayByteLength(leaves[0]));
  // jax.random.split(jax.random.key(0)), as JAX computes it.
  expect(words(data[0])).toEqual([1797259609, 2579123966, 928981903, 3453687069]);
});

test("float0 has no bytes, in or out", async () => {
  const x = new ShapeDtypeStruct([3], "float32", ONE);
  const zero = new ShapeDtypeStruct([3], "float0", ONE);
  const xs = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const call = program("tangent_of_int", [x, zero]);
  const { outputs, data } = await client.execute(call, [xs, new Uint8Array(0)]);
  const { leaves } = outputs;
  // Outputs in key order: double, made, zero.
  expect(leaves.map((l) => l.dtype)).toEqual(["float32", "float0", "float0"]);
  expect(Array.from(new Float32Array(data[0].slice().buffer))).toEqual([2, 4, 6]);
  expect(data.slice(1).map((d) => d.length)).toEqual([0, 0]);
});

test("ExecuteSharded takes and gives key arrays shard by shard, as Execute does whole", async () => {
  const keys = new ShapeDtypeStruct([8], "key", ROWS, { keyType: FRY });
  const n = new ShapeDtypeStruct([8], "uint32", ROWS);
  const call = program("fold_and_draw", [keys, n], MESH.devices.ids);
  const keyData = Uint32Array.from({ length: 16 }, (_, i) => i * 7919);
  const counts = Uint32Array.from({ length: 8 }, (_, i) => i);
  const asBytes = (a: Uint32Array) => new Uint8Array(a.buffer);
  const whole = await client.execute(call, [asBytes(keyData), asBytes(counts)]);
  const sharded = await client.executeSharded(call, [keyData, counts]);
  // Outputs in key order: bits (uint32 [8, 2]), keys (key<fry> [8], its key data [8, 2]).
  expect(sharded.outputs.leaves.map((l) => l.dtypeString)).toEqual(["uint32", "key<fry>"]);
  expect(sharded.outputs.leaves[1].shape).toEqual([8]);
  expect(sharded.data.map((d) => d.length)).toEqual([64, 64]);
  expect(sharded.data.map(words)).toEqual(whole.data.map(words));
  expect(new Set(words(sharded.data[1])).size).toBe(16); // folded keys, not zeros
});

test("ExecuteSharded takes and gives float0 as no bytes", async () => {
  const x = new ShapeDtypeStruct([8], "float32", ROWS);
  const zero = new ShapeDtypeStruct([8], "float0", ROWS);
  const call = program("tangent_of_int", [x, zero], MESH.devices.ids);
  const xs = Float32Array.from({ length: 8 }, (_, i) => i - 3);
  const { outputs, data } = await client.executeSharded(call, [xs, new Uint8Array(0)]);
  expect(outputs.leaves.map((l) => l.dtype)).toEqual(["float32", "float0", "float0"]);
  expect(Array.from(new Float32Array(data[0].slice().buffer))).toEqual(
    Array.from(xs, (v) => v * 2),
  );
  expect(data.slice(1).map((d) => d.length)).toEqual([0, 0]);
});
