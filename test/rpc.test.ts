import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import { ProgramPayload } from "../gen/ts/colocated/v1/payload";
import {
  DeviceList,
  encodeProgram,
  FunctionRef,
  lowerProgramPayload,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
} from "../src";
import { callInputs, VersionMismatchError, WorkerClient, WorkerError } from "../src/rpc";
import { range } from "./fixtures";
import {
  ensurePythonEnv,
  freePort,
  ROOT,
  type RunningWorker,
  runPython,
  startWorker,
  stopAllWorkers,
  whenStderrSays,
} from "./rpc-worker";

// These tests run the real Python worker (JAX on 8 CPU devices) and call it over gRPC.
jest.setTimeout(30_000);

const EXAMPLES = "colocated_wire.examples";
const dir = mkdtempSync(join(tmpdir(), "colocated-wire-rpc-"));
const PICKLED = join(dir, "pickled.program.bin");
/** Program files for the shared worker, which reads colocated.v1.0 only. */
const V1_0 = { targetMinorVersion: 0 };

/** The one worker most tests share: version 1.0 only, examples allowed, no pickles. */
let shared: RunningWorker;
/** Versions 1.1 to 1.3, the newest (min 1), examples and pickles allowed. */
let newer: RunningWorker;
/** A worker the kill test may kill. */
let doomed: RunningWorker;
const clients: WorkerClient[] = [];

async function connect(worker: RunningWorker, options = {}): Promise<WorkerClient> {
  const client = await WorkerClient.connect(worker.target, options);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  ensurePythonEnv();
  // JAX takes a few seconds to start, so the workers start together.
  const workers = Promise.all([
    startWorker(["--allow-module", EXAMPLES, "--max-version", "0"]),
    startWorker([
      "--allow-module",
      EXAMPLES,
      "--allow-pickle",
      "--min-version",
      "1",
      "--max-version",
      "3",
    ]),
    startWorker(["--allow-module", EXAMPLES]),
  ]);
  const pickled = runPython("python/tests/pickled_program.py", PICKLED, "2.5");
  [[shared, newer, doomed]] = await Promise.all([workers, pickled]);
}, 900_000); // on a fresh clone, python-env.sh first installs the virtual environment

afterAll(async () => {
  for (const client of clients) client.close();
  await stopAllWorkers();
});

const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
const XY = new NamedSharding(mesh, new PartitionSpec("x", "y"));
const X_ONLY = new NamedSharding(mesh, new PartitionSpec("x"));
const MATRIX = new ShapeDtypeStruct([8, 4], "float32", XY);
const SCALAR = new ShapeDtypeStruct([], "float32", new NamedSharding(mesh, new PartitionSpec()));

function example(qualname: string, args: ShapeDtypeStruct[], module = EXAMPLES): Program {
  return {
    function: new FunctionRef(module, qualname),
    inputs: callInputs(args),
    devices: mesh.devices,
  };
}

/** Float32 data as the raw little-endian bytes the wire carries. */
function f32(values: number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

function floats(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

/** 8x4 values k*(i - 10), row-major. */
function matrix(k: number): number[] {
  return range(32).map((i) => k * (i - 10));
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

describe("a real colocated worker", () => {
  test("connect negotiates the version", async () => {
    const client = await connect(shared);
    expect(client.version).toBe(0);
    expect(client.serverRange).toEqual({ minVersion: 0, maxVersion: 0 });
  });

  test("six concurrent calls return the right values, shapes, dtypes and shardings", async () => {
    const client = await connect(shared);
    const program = example("summarize", [MATRIX, new ShapeDtypeStruct([8, 4], "float32", X_ONLY)]);
    const ks = [1, 2, 3, 4, 5, 6];
    const results = await Promise.all(
      ks.map((k) => client.execute(program, [f32(matrix(k)), f32(matrix(1).map(() => k))])),
    );
    results.forEach(({ outputs, data }, call) => {
      const k = ks[call];
      const x = matrix(k);
      // Dict keys come back sorted, as JAX sorts them.
      expect(outputs.treedef.root).toMatchObject({
        kind: "dict",
        keys: ["count_positive", "doubled", "positive", "row_sums", "sum"],
      });
      const [count, doubled, positive, rowSums, sum] = outputs.leaves;
      expect([count.dtype, count.shape]).toEqual(["int32", []]);
      expect([doubled.dtype, doubled.shape]).toEqual(["float32", [8, 4]]);
      expect([positive.dtype, positive.shape]).toEqual(["bool", [8, 4]]);
      expect([rowSums.dtype, rowSums.shape]).toEqual(["float32", [8]]);
      expect([sum.dtype, sum.shape]).toEqual(["float32", [8, 4]]);

      expect(new Int32Array(data[0].buffer)[0]).toBe(x.filter((v) => v > 0).length);
      expect(floats(data[1])).toEqual(x.map((v) => v * 2));
      expect(Array.from(data[2])).toEqual(x.map((v) => (v > 0 ? 1 : 0)));
      expect(floats(data[3])).toEqual(
        range(8).map((r) => x.slice(4 * r, 4 * r + 4).reduce((a, b) => a + b)),
      );
      expect(floats(data[4])).toEqual(x.map((v) => v + k));

      // NamedShardings on the worker's 8-device mesh, all sharing one lifted Mesh instance.
      for (const leaf of outputs.leaves) {
        expect(leaf.sharding).toBeInstanceOf(NamedSharding);
        const sharding = leaf.sharding as NamedSharding;
        expect(sharding.mesh).toBe((doubled.sharding as NamedSharding).mesh);
        expect(sharding.mesh.equals(mesh)).toBe(true);
      }
      expect(doubled.sharding).toBe(sum.sharding);
      expect(doubled.sharding!.equals(XY)).toBe(true);
      expect(rowSums.sharding!.equals(X_ONLY)).toBe(true);
      expect((count.sharding as NamedSharding).spec.entries).toEqual([]);
    });
  });

  describe("version negotiation", () => {
    test("both sides agree at the lower maximum", async () => {
      const client = await connect(shared, { minVersion: 0, maxVersion: 1 });
      expect(client.version).toBe(0);
      const newest = await connect(newer, { minVersion: 0, maxVersion: 2 });
      expect(newest.version).toBe(2);
      expect(newest.serverRange).toEqual({ minVersion: 1, maxVersion: 3 });
    });

    test("a client below the worker's minimum is refused, naming both ranges", async () => {
      const error = await refusal(WorkerClient.connect(newer.target, { maxVersion: 0 }));
      expect(error).toBeInstanceOf(VersionMismatchError);
      expect(error.code).toBe(status.FAILED_PRECONDITION);
      expect(error.message).toBe(
        "no common colocated.v1 version: client supports 1.0–1.0, server 1.1–1.3",
      );
    });

    test("a worker below the client's minimum is refused, naming both ranges", async () => {
      const error = await refusal(
        WorkerClient.connect(shared.target, { minVersion: 1, maxVersion: 2 }),
      );
      expect(error).toBeInstanceOf(VersionMismatchError);
      expect(error.message).toBe(
        "no common colocated.v1 version: client supports 1.1–1.2, server 1.0–1.0",
      );
    });

    test("a payload of a newer minor version is refused at 1.0 and accepted at 1.1", async () => {
      // Lowered parts are shared and frozen: a copy is changed.
      const message = structuredClone(
        lowerProgramPayload(example("affine", [MATRIX, SCALAR, SCALAR])),
      );
      message.header!.minorVersion = 1;
      message._unknownFields = { [8 * 99 + 2]: [new Uint8Array([3, 1, 2, 3])] };
      message.table!.entries[1]._unknownFields = { [8 * 40]: [new Uint8Array([7])] };
      const bytes = ProgramPayload.encode(message).finish();
      const inputs = [f32(matrix(1)), f32([3]), f32([0.5])];

      const old = await connect(shared);
      const error = await refusal(old.execute(bytes, inputs));
      expect(error.code).toBe(status.INVALID_ARGUMENT);
      expect(error.details).toBe(
        "program payload refused: header.minor_version: minor version 1 is newer than the agreed 0",
      );

      const current = await connect(newer, { maxVersion: 1 });
      const { data } = await current.execute(bytes, inputs);
      expect(floats(data[0])).toEqual(matrix(1).map((v) => v * 3 + 0.5));
    });
  });

  describe("what the worker refuses", () => {
    test("a function from a module it was not told to allow", async () => {
      const client = await connect(shared);
      const error = await refusal(
        client.execute(example("main", [MATRIX], "colocated_wire.worker"), [f32(matrix(1))]),
      );
      expect(error.code).toBe(status.PERMISSION_DENIED);
      expect(error.details).toMatch(/module 'colocated_wire.worker' is not allowed on this worker/);
    });

    test("a pickled function, unless started with --allow-pickle", async () => {
      const program = readFileSync(PICKLED);
      const input = [f32(matrix(1))];
      const client = await connect(shared);
      const error = await refusal(client.execute(program, input));
      expect(error.code).toBe(status.PERMISSION_DENIED);
      expect(error.details).toMatch(/pickled.*--allow-pickle/);

      const allowed = await connect(newer, { maxVersion: 1 });
      const { data } = await allowed.execute(program, input);
      expect(floats(data[0])).toEqual(matrix(1).map((v) => v + 2.5));
    });

    test("input data that does not fit its spec", async () => {
      const client = await connect(shared);
      const error = await refusal(
        client.execute(example("affine", [MATRIX, SCALAR, SCALAR]), [
          f32(matrix(1)),
          f32([1, 2]),
          f32([0]),
        ]),
      );
      expect(error.code).toBe(status.INVALID_ARGUMENT);
      expect(error.details).toBe("inputs[1]: 8 bytes, but a float32[] input needs 4");
    });

    test("a function that raises reports its error", async () => {
      const client = await connect(shared);
      const error = await refusal(client.execute(example("fail", [MATRIX]), [f32(matrix(1))]));
      expect(error.code).toBe(status.UNKNOWN);
      expect(error.message).toMatch(/colocated_wire.examples.fail raised ValueError/);
    });
  });

  describe("deadlines and dying workers", () => {
    // It returns only once `release` is called, so each test decides when a call may end.
    const blocking = example("block_until_released", [MATRIX]);
    // On one device: a function over several devices would wait for the blocked one's turn
    // (python/colocated_wire/worker/device_turn.py).
    const release: Program = {
      function: new FunctionRef(EXAMPLES, "release"),
      inputs: callInputs([new ShapeDtypeStruct([8, 4], "float32", new SingleDeviceSharding(0))]),
      devices: new DeviceList([0]),
    };
    const BLOCKED = "block_until_released: blocked";

    test("a deadline that expires fails a call that cannot end before it", async () => {
      const client = await connect(shared);
      const error = await refusal(client.execute(blocking, [f32(matrix(1))], { deadlineMs: 500 }));
      expect(error.code).toBe(status.DEADLINE_EXCEEDED);
      expect(error.message).toMatch(/no answer within 500 ms/);
      // Only now may the blocked call end (or, had it not started yet, the next one).
      const { data } = await client.execute(release, [f32(matrix(2))]);
      expect(floats(data[0])).toEqual(matrix(2));
    });

    test("a worker killed mid-call gives a clear error, not the deadline's", async () => {
      const client = await connect(doomed);
      const blocked = whenStderrSays(doomed, BLOCKED);
      const call = refusal(client.execute(blocking, [f32(matrix(1))], { deadlineMs: 600_000 }));
      const early = call.then((e) => `the call ended before it blocked: ${e.message}`);
      expect(await Promise.race([blocked.then(() => "blocked"), early])).toBe("blocked");
      doomed.process.kill("SIGKILL");
      const error = await call;
      expect(error.code).toBe(status.UNAVAILABLE);
      expect(error.message).toMatch(/died during the call/);
      // A new connection to the dead worker fails fast too.
      const again = await refusal(WorkerClient.connect(doomed.target, { deadlineMs: 5_000 }));
      expect(again.code).toBe(status.UNAVAILABLE);
    });

    test("with waitForReady a call made while the worker restarts waits for it; without, it fails", async () => {
      const flags = ["--allow-module", EXAMPLES, "--port", String(await freePort())];
      const first = await startWorker(flags);
      const waiting = await connect(first, { waitForReady: true, deadlineMs: 120_000 });
      const plain = await connect(first, { deadlineMs: 120_000 });
      expect(floats((await waiting.execute(release, [f32(matrix(1))])).data[0])).toEqual(matrix(1));
      const gone = new Promise((resolve) => first.process.once("exit", resolve));
      first.process.kill("SIGKILL");
      await gone;
      // Nothing listens: a call fails at once, unless it waits for the worker to be back.
      expect((await refusal(plain.execute(release, [f32(matrix(2))]))).code).toBe(
        status.UNAVAILABLE,
      );
      const pending = waiting.execute(release, [f32(matrix(3))]).then(
        ({ data }) => floats(data[0]),
        (error: Error) => error,
      );
      await startWorker(flags); // on the same port, without the program: it is loaded again
      expect(await pending).toEqual(matrix(3));
    }, 180_000);
  });

  describe("colocated-wire call", () => {
    const CLI = join(ROOT, "dist", "src", "cli", "main.js");

    test("sends a program file and input files, prints the outputs, writes their data", () => {
      const program = join(dir, "summarize.program.bin");
      // Written for the 1.0 worker, as a client that negotiated 1.0 would write it.
      writeFileSync(program, encodeProgram(example("summarize", [MATRIX, MATRIX]), V1_0));
      writeFileSync(join(dir, "x.bin"), f32(matrix(2)));
      writeFileSync(join(dir, "y.bin"), f32(matrix(1)));
      const outDir = join(dir, "call-out");
      mkdirSync(outDir);
      const out = execFileSync(
        "node",
        [
          CLI,
          "call",
          "--target",
          shared.target,
          program,
          "-i",
          join(dir, "x.bin"),
          "-i",
          join(dir, "y.bin"),
          "--out-dir",
          outDir,
        ],
        { encoding: "utf8" },
      );
      expect(out).toMatch(/colocated\.v1 version 1\.0 \(it supports 1\.0–1\.0\)/);
      expect(out).toMatch(/^specs payload: \d+ bytes/m);
      expect(out).toMatch(/5 outputs:/);
      expect(out).toContain(
        `1  ["doubled"]  float32[8,4] NamedSharding(mesh x=2 y=4 of 8 devices, P(x, y))  -> ${join(outDir, "output-1.bin")}`,
      );
      expect(floats(new Uint8Array(readFileSync(join(outDir, "output-1.bin"))))).toEqual(matrix(4));
    });

    test("works out of the box on the example program and inputs that demo writes", () => {
      const out = join(dir, "demo-call");
      mkdirSync(out);
      const program = join(out, "example.bin");
      execFileSync("node", [
        CLI,
        "demo",
        "--leaves",
        "2",
        "--mesh",
        "2x4",
        "-o",
        program,
        "--inputs",
        out,
      ]);
      const inputs = ["input-0.bin", "input-1.bin"].flatMap((name) => ["-i", join(out, name)]);
      // demo writes colocated.v1.3, as the newest client does; `newer` reads it.
      const printed = execFileSync(
        "node",
        [CLI, "call", "-t", newer.target, program, ...inputs, "--out-dir", out],
        { encoding: "utf8" },
      );
      expect(printed).toMatch(/3 outputs:/);
      expect(printed).toContain(
        `0  ["loss"]  float32[] NamedSharding(mesh data=2 model=4 of 8 devices, P())`,
      );
      // train_step's loss: the mean of mean(p^2) over leaves of 1/8 and 2/8.
      expect(floats(new Uint8Array(readFileSync(join(out, "output-0.bin"))))).toEqual([5 / 128]);
    });

    test("demo --run starts a worker, runs the example program on it and stops it", () => {
      const run = spawnSync("node", [CLI, "demo", "--run"], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^program payload: \d+ bytes/);
      expect(run.stdout).toMatch(/colocated\.v1 version 1\.3 \(it supports 1\.0–1\.3\)/);
      expect(run.stdout).toMatch(/9 outputs:/);
      expect(run.stdout).toContain("loss = 0.3984375\n");
    }, 300_000);

    test("a refused call prints one line and exits 1", () => {
      const program = join(dir, "fail.program.bin");
      writeFileSync(program, encodeProgram(example("fail", [MATRIX]), V1_0));
      const run = spawnSync("node", [CLI, "call", "-t", shared.target, program], {
        encoding: "utf8",
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(
        /^colocated-wire: Execute on \S+ failed: INVALID_ARGUMENT: inputs: 0 arrays for a program of 1 input leaves\n$/,
      );
    });
  });
});
