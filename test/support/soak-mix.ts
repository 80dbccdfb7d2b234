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
import { WrongAnswer } from "./soak-tally";

/**
 * The soak's calls (test/worker-load.test.ts makes them too): `colocated_wire.examples.affine`
 * over the 2x4 mesh of 8 devices (x float32[8, 256]), `summarize` over the same mesh, and
 * `affine` on one device, in turn, each answer checked against values computed here: calls
 * that launch one at a time (worker/device_turn.py) beside calls that need no turn. Each call's
 * inputs depend on its number, so an answer that belongs to another call is caught too.
 */

const EXAMPLES = "colocated_wire.examples";
const mesh = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
const program = (name: string, leaves: ShapeDtypeStruct[]): Program => ({
  function: new FunctionRef(EXAMPLES, name),
  inputs: callInputs(leaves),
  devices: mesh.devices,
});
const f32 = (values: ArrayLike<number>) => new Uint8Array(Float32Array.from(values).buffer);
const floats = (b: Uint8Array) => new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);

// Small integers and halves: every result below is exact in float32, whatever the order of sums.
const X = Float32Array.from({ length: 8 * 256 }, (_, i) => (i % 97) - 48);
const X_BYTES = f32(X);
const AFFINE = program("affine", [
  new ShapeDtypeStruct([8, 256], "float32", on("x", "y")),
  new ShapeDtypeStruct([], "float32", on()),
  new ShapeDtypeStruct([], "float32", on()),
]);
const ON_ONE_DEVICE: Program = {
  function: new FunctionRef(EXAMPLES, "affine"),
  inputs: callInputs([
    new ShapeDtypeStruct([8, 256], "float32", new SingleDeviceSharding(3)),
    new ShapeDtypeStruct([], "float32", new SingleDeviceSharding(3)),
    new ShapeDtypeStruct([], "float32", new SingleDeviceSharding(3)),
  ]),
  devices: new DeviceList([3]),
};
const SMALL = Float32Array.from({ length: 32 }, (_, i) => i - 15.5);
const SMALL_BYTES = f32(SMALL);
const SUMMARIZE = program("summarize", [
  new ShapeDtypeStruct([8, 4], "float32", on("x", "y")),
  new ShapeDtypeStruct([8, 4], "float32", on("x", "y")),
]);

/** Options of one call: its deadline, and the signal that cancels it. */
export interface MixOptions {
  deadlineMs: number;
  signal?: AbortSignal;
}

/**
 * Call number `n` of the mix (by n % 3: affine over 8 devices, summarize, affine on one device);
 * throws WrongAnswer on a wrong value.
 */
export async function mixedCall(client: WorkerClient, n: number, options: MixOptions) {
  const kind = n % 3;
  if (kind === 0) await affineCall(client, AFFINE, n, options);
  else if (kind === 1) await summarizeCall(client, n, options);
  else await affineCall(client, ON_ONE_DEVICE, n, options);
}

async function affineCall(client: WorkerClient, on: Program, n: number, options: MixOptions) {
  const scale = (n % 5) + 1;
  const shift = n % 100_000;
  const { data } = await client.execute(on, [X_BYTES, f32([scale]), f32([shift])], options);
  const got = floats(data[0]);
  if (got.length !== X.length) throw new WrongAnswer(`affine call ${n}: ${got.length} elements`);
  for (let i = 0; i < X.length; i++) {
    const want = X[i] * scale + shift;
    if (got[i] !== want)
      throw new WrongAnswer(`affine call ${n}: element ${i} is ${got[i]}, not ${want}`);
  }
}

async function summarizeCall(client: WorkerClient, n: number, options: MixOptions) {
  const y = (n % 1000) + 0.5;
  const { outputs, data } = await client.execute(
    SUMMARIZE,
    [SMALL_BYTES, f32(SMALL.map(() => y))],
    options,
  );
  const wrong = (what: string) => new WrongAnswer(`summarize call ${n}: ${what}`);
  // Outputs in key order: count_positive, doubled, positive, row_sums, sum.
  const dtypes = outputs.leaves.map((l) => l.dtype).join(",");
  if (dtypes !== "int32,float32,bool,float32,float32") throw wrong(`output dtypes ${dtypes}`);
  const count = new Int32Array(data[0].buffer, data[0].byteOffset, 1)[0];
  if (count !== SMALL.filter((v) => v > 0).length) throw wrong(`count_positive is ${count}`);
  const expect = (name: string, got: ArrayLike<number>, want: (v: number, i: number) => number) => {
    if (got.length !== SMALL.length) throw wrong(`${name} has ${got.length} elements`);
    for (let i = 0; i < got.length; i++) {
      if (got[i] !== want(SMALL[i], i))
        throw wrong(`${name}[${i}] is ${got[i]}, not ${want(SMALL[i], i)}`);
    }
  };
  expect("doubled", floats(data[1]), (v) => v * 2);
  expect("positive", data[2], (v) => (v > 0 ? 1 : 0));
  expect("sum", floats(data[4]), (v) => v + y);
  const rowSums = floats(data[3]);
  if (rowSums.length !== 8) throw wrong(`row_sums has ${rowSums.length} elements`);
  for (let r = 0; r < 8; r++) {
    const want = SMALL.slice(4 * r, 4 * r + 4).reduce((a, b) => a + b);
    if (rowSums[r] !== want) throw wrong(`row_sums[${r}] is ${rowSums[r]}, not ${want}`);
  }
}
