import { credentials, Metadata, status } from "@grpc/grpc-js";
import {
  ColocatedWorkerServiceClient,
  type ExecuteShardedRequest,
} from "../gen/ts/colocated/v1/service";
import {
  DecodeError,
  DeviceList,
  encodeSpecs,
  FunctionRef,
  lowerProgramPayload,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import {
  callInputs,
  type ShardedProgress,
  WorkerClient,
  WorkerError,
  WorkerGroup,
} from "../src/rpc";
import { ShardLayout } from "../src/rpc/sharded/shard-layout";
import { checkShardedCall } from "../src/rpc/sharded/sharded-call";
import { ShardedOutputs } from "../src/rpc/sharded/sharded-outputs";
import { distinctShards, type ShardIndex } from "../src/shard-indices";
import { range } from "./fixtures";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";
import { expectSummarized, floats } from "./summarize-outputs";

// The worker tests run the real Python worker (JAX on 8 CPU devices) and call it over gRPC.
jest.setTimeout(120_000);

const EXAMPLES = "colocated_wire.examples";
const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
const sharded = (...entries: (string | null)[]) =>
  new NamedSharding(mesh, new PartitionSpec(...entries));
const f32 = (shape: number[], ...entries: (string | null)[]) =>
  new ShapeDtypeStruct(shape, "float32", sharded(...entries));

function example(qualname: string, args: ShapeDtypeStruct[]): Program {
  return {
    function: new FunctionRef(EXAMPLES, qualname),
    inputs: callInputs(args),
    devices: mesh.devices,
  };
}

/** The shard's elements, row-major, picked one by one from the global array: the model. */
function naiveShard(
  global: Uint8Array,
  shape: number[],
  index: ShardIndex,
  item: number,
): Uint8Array {
  const out: number[] = [];
  const size = shape.map((_, d) => index.stop[d] - index.start[d]);
  const count = size.reduce((n, d) => n * d, 1);
  for (let k = 0; k < count; k++) {
    let rest = k;
    let at = 0;
    let stride = 1;
    const coords = new Array<number>(shape.length);
    for (let d = shape.length - 1; d >= 0; d--) {
      coords[d] = index.start[d] + (rest % size[d]);
      rest = Math.floor(rest / size[d]);
    }
    for (let d = shape.length - 1; d >= 0; d--) {
      at += coords[d] * stride;
      stride *= shape[d];
    }
    for (let b = 0; b < item; b++) out.push(global[at * item + b]);
  }
  return Uint8Array.from(out);
}

describe("ShardLayout", () => {
  const cases: [number[], (string | null)[], number][] = [
    [[8, 4], ["x", "y"], 4],
    [[8, 4], ["y", "x"], 2],
    [[6, 8], [null, "y"], 1],
    [[2, 3, 8], ["x", null, "y"], 8],
    [[16, 2], [null], 4],
    [[], [], 4],
    [[4, 0], ["y"], 4],
  ];
  test.each(cases)(
    "shape %j spec %j itemsize %d: gather and scatter at any chunk size",
    (shape, spec, item) => {
      const sharding = sharded(...spec);
      const total = shape.reduce((n, d) => n * d, item);
      const global = Uint8Array.from(range(total), (i) => (i * 7 + 3) & 0xff);
      for (const { index } of distinctShards(sharding, shape)) {
        const layout = new ShardLayout(shape, index, item);
        const want = naiveShard(global, shape, index, item);
        expect(layout.byteLength).toBe(want.length);
        for (const chunk of [1, 3, 5, 64, 1 << 20]) {
          const into = new Uint8Array(total);
          const got: number[] = [];
          for (let at = 0; at < layout.byteLength; at += chunk) {
            const piece = layout.gather(global, at, Math.min(chunk, layout.byteLength - at));
            got.push(...piece);
            layout.scatter(into, at, piece);
          }
          expect(Uint8Array.from(got)).toEqual(want);
          expect(naiveShard(into, shape, index, item)).toEqual(want);
        }
      }
    },
  );

  test("a chunk inside one run is a view of the caller's array, not a copy", () => {
    const global = new Uint8Array(8 * 4 * 4);
    const layout = new ShardLayout([8, 4], { start: [4, 0], stop: [8, 4] }, 4);
    expect(layout.gather(global, 16, 32).buffer).toBe(global.buffer);
  });
});

describe("ShardedOutputs checks the worker's stream", () => {
  const spec = f32([8, 4], "x", "y");
  const message = () => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(spec);
    return encodeSpecs(treedef, leaves, { targetMinorVersion: 2 });
  };
  const chunk = (offset: number, bytes: number, index?: ShardIndex, last = false, leaf = 0) => ({
    leaf,
    index: index && { start: index.start.map(BigInt), stop: index.stop.map(BigInt) },
    offset: BigInt(offset),
    data: new Uint8Array(bytes),
    last,
  });
  const first = { start: [0, 0], stop: [4, 1] };
  const feed = (o: ShardedOutputs, ...chunks: ReturnType<typeof chunk>[]) => {
    for (const c of chunks) o.chunk(c);
  };
  function outputs() {
    const out = new ShardedOutputs(2);
    out.specs(message());
    return out;
  }
  const faults: [string, (o: ShardedOutputs) => void, string][] = [
    [
      "gap",
      (o) => feed(o, chunk(0, 8, first), chunk(12, 4)),
      "outputs[0]: shard [0:4,0:1] at offset 12: the chunk leaves a gap (8 so far)",
    ],
    [
      "overlap",
      (o) => feed(o, chunk(0, 8, first), chunk(4, 4)),
      "outputs[0]: shard [0:4,0:1] at offset 4: the chunk overlaps bytes already received (8 so far)",
    ],
    [
      "overrun",
      (o) => o.chunk(chunk(0, 20, first)),
      "outputs[0]: shard [0:4,0:1] at offset 0: runs past the shard's end (16 bytes)",
    ],
    [
      "unknown shard",
      (o) => o.chunk(chunk(0, 16, { start: [0, 0], stop: [8, 4] })),
      "outputs[0]: shard [0:8,0:4] is not a shard of the float32[8,4] output",
    ],
    [
      "twice",
      (o) => feed(o, chunk(0, 16, first, true), chunk(0, 16, first, true)),
      "outputs[0]: shard [0:4,0:1] sent twice",
    ],
    [
      "no leaf",
      (o) => o.chunk(chunk(0, 16, first, true, 3)),
      "outputs[3]: no such output (there are 1)",
    ],
    [
      "missing",
      (o) => {
        o.chunk(chunk(0, 16, first, true));
        o.end();
      },
      "outputs[0]: shard [0:4,1:2] never arrived (1 of 8)",
    ],
    ["no end", (o) => o.result(), "end: the worker closed the stream without `end`"],
  ];
  test("outputs land in the caller's buffers when given, each checked against its output", () => {
    const mine = new Uint8Array(128);
    const out = new ShardedOutputs(2, undefined, [mine]);
    out.specs(message());
    for (const { index } of distinctShards(spec.sharding as NamedSharding, spec.shape)) {
      out.chunk({ ...chunk(0, 16, index, true), data: new Uint8Array(16).fill(7) });
    }
    out.end();
    expect(out.result()[0]).toBe(mine);
    expect(mine.every((b) => b === 7)).toBe(true);
    const specs = message();
    expect(() => new ShardedOutputs(2, undefined, [new Uint8Array(64)]).specs(specs)).toThrow(
      "into[0]: 64 bytes, but the float32[8,4]",
    );
    expect(() => new ShardedOutputs(2, undefined, [mine, mine]).specs(specs)).toThrow(
      "into: 2 buffers for 1 output leaves",
    );
  });

  test.each(faults)(
    "%s is a DecodeError naming the output, shard and offset",
    (_name, act, text) => {
      const out = outputs();
      expect(() => act(out)).toThrow(DecodeError);
      expect(() => act(outputs())).toThrow(text);
    },
  );
});

describe("into takes any ArrayBufferView, and anything else is refused at the call", () => {
  const spec = f32([8, 4], "x", "y");
  const check = (into: unknown) =>
    checkShardedCall([], [], { into: into as ArrayBufferView[] }).into;
  const payload = () => {
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(spec);
    return encodeSpecs(treedef, leaves, { targetMinorVersion: 2 });
  };

  test("each buffer becomes a Uint8Array on exactly its bytes; a Uint8Array is itself", () => {
    const big = new ArrayBuffer(64);
    const mine = new Uint8Array(8);
    const views = check([
      mine,
      new Float32Array(3),
      new DataView(big, 12, 20),
      new Int16Array(big, 2, 5),
    ]) as Uint8Array[];
    expect(views[0]).toBe(mine);
    expect(views.slice(1).map((v) => [v.buffer === big, v.byteOffset, v.byteLength])).toEqual([
      [false, 0, 12],
      [true, 12, 20],
      [true, 2, 10],
    ]);
    expect(check(undefined)).toBeUndefined();
  });

  test("shards land in a Float32Array and in a DataView's own bytes, nowhere else", () => {
    const big = new Uint8Array(160).fill(0xee);
    const window = new DataView(big.buffer, 16, 128);
    for (const into of [new Float32Array(32), window]) {
      const out = new ShardedOutputs(2, undefined, check([into]));
      out.specs(payload());
      for (const { index } of distinctShards(spec.sharding as NamedSharding, spec.shape)) {
        const shard = Float32Array.from(range(4), (k) => 10 * index.start[0] + k + index.start[1]);
        out.chunk({
          leaf: 0,
          index: { start: index.start.map(BigInt), stop: index.stop.map(BigInt) },
          offset: 0n,
          data: new Uint8Array(shard.buffer),
          last: true,
        });
      }
      out.end();
      const got = out.result()[0];
      expect([got.buffer, got.byteOffset, got.byteLength]).toEqual([
        into.buffer,
        into.byteOffset,
        128,
      ]);
      // Element [r, c] of shard rows r0..r0+3 is 10 * r0 + (r - r0) + c: row-major in place.
      const want = Float32Array.from(range(32), (i) => {
        const [r, c] = [Math.floor(i / 4), i % 4];
        return 10 * (r - (r % 4)) + (r % 4) + c;
      });
      expect(new Float32Array(got.buffer, got.byteOffset, 32)).toEqual(want);
    }
    expect(big.subarray(0, 16).every((b) => b === 0xee)).toBe(true);
    expect(big.subarray(144).every((b) => b === 0xee)).toBe(true);
  });

  test("a view of the wrong size names the output, its byte length and the view's", () => {
    const out = new ShardedOutputs(2, undefined, check([new Float32Array(16)]));
    expect(() => out.specs(payload())).toThrow(
      "into[0]: 64 bytes, but the float32[8,4] output has 128",
    );
  });

  const refused: [string, unknown, string][] = [
    ["a number", [new Float32Array(32), 3], "into[1]: a number, not an ArrayBufferView"],
    ["null", [null], "into[0]: null, not an ArrayBufferView"],
    ["a hole", new Array(1), "into[0]: undefined, not an ArrayBufferView"],
    ["a plain array", [[1, 2, 3]], "into[0]: an array, not an ArrayBufferView"],
    ["an ArrayBuffer", [new ArrayBuffer(128)], "into[0]: an ArrayBuffer, not an ArrayBufferView"],
    [
      "one view, not in an array",
      new Float32Array(32),
      "into: a Float32Array, not an array of one ArrayBufferView per output leaf",
    ],
  ];
  test.each(refused)("%s is a TypeError at the call", (_name, into, text) => {
    expect(() => check(into)).toThrow(TypeError);
    expect(() => check(into)).toThrow(text);
    // A WorkerGroup checks before its turn: it needs no member to refuse it.
    const group = Object.create(WorkerGroup.prototype) as WorkerGroup;
    const program = example("summarize", [spec, spec]);
    const inputs = [new Float32Array(32), new Float32Array(32)];
    expect(() => group.executeSharded(program, inputs, { into: into as Uint8Array[] })).toThrow(
      text,
    );
  });
});

describe("ExecuteSharded against a real worker", () => {
  let worker: RunningWorker;
  let doomed: RunningWorker;
  const clients: WorkerClient[] = [];
  const connect = async (w: RunningWorker) => {
    const client = await WorkerClient.connect(w.target);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    ensurePythonEnv();
    [worker, doomed] = await Promise.all([
      startWorker(["--allow-module", EXAMPLES]),
      startWorker(["--allow-module", EXAMPLES]),
    ]);
  }, 900_000);

  afterAll(async () => {
    for (const client of clients) client.close();
    await stopAllWorkers();
  });

  const X = Float32Array.from(range(32), (i) => i - 10);
  const Y = Float32Array.from(range(32), () => 0.5);

  test("summarize: each distinct shard once (a replicated one once), outputs in place", async () => {
    const client = await connect(worker);
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    const seen: ShardedProgress[] = [];
    const { outputs, data } = await client.executeSharded(program, [X, Y], {
      onProgress: (p) => seen.push({ ...p }),
    });
    // X's 8 shards of 16 bytes, and Y's 2 distinct shards of 64 bytes (not 8 of them).
    expect(seen.at(-1)?.sentBytes).toBe(128 + 128);
    expectSummarized(X, outputs, data);
    // The program was loaded once, and is named by handle from then on.
    const again = await client.executeSharded(program, [Y, X]);
    expect(floats(again.data[1])).toEqual(Y.map((v) => v * 2));
    expect(client.programLoads).toBe(1);
  });

  test("16 MiB in 64 KiB chunks, sharded on both axes, comes back exact", async () => {
    const client = await connect(worker);
    const n = 2048;
    const x = new Float32Array(n * n);
    for (let i = 0; i < x.length; i++) x[i] = (i % 1009) / 8;
    const shift = Float32Array.from(range(n), (i) => i);
    const program = example("affine", [f32([n, n], "x", "y"), f32([]), f32([n], "y")]);
    let calls = 0;
    let last: ShardedProgress = { sentBytes: 0, receivedBytes: 0 };
    const { data } = await client.executeSharded(program, [x, Float32Array.of(3), shift], {
      chunkBytes: 64 << 10,
      onProgress: (p) => {
        calls++;
        last = { ...p };
      },
    });
    expect(last).toEqual({ sentBytes: 4 * n * n + 4 + 4 * n, receivedBytes: 4 * n * n });
    // Sent: 256 chunks of x, 1 of the scalar, 4 of shift; received: the specs, 16 chunks of
    // 1 MiB, and the end.
    expect(calls).toBe(256 + 1 + 4 + 1 + 16 + 1);
    const want = new Float32Array(n * n);
    for (let i = 0; i < want.length; i++) want[i] = x[i] * 3 + shift[i % n];
    expect(data[0].length).toBe(want.byteLength);
    expect(Buffer.compare(data[0], new Uint8Array(want.buffer))).toBe(0);
    // Again into that result's buffer: the same buffer comes back, holding the new result.
    const again = await client.executeSharded(program, [x, Float32Array.of(-1), shift], {
      into: data,
    });
    expect(again.data[0]).toBe(data[0]);
    for (let i = 0; i < want.length; i++) want[i] = -x[i] + shift[i % n];
    expect(Buffer.compare(data[0], new Uint8Array(want.buffer))).toBe(0);
  });

  test("inputs of the wrong size are refused before anything is sent", async () => {
    const client = await connect(worker);
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    await expect(client.executeSharded(program, [X, Y.subarray(1)])).rejects.toThrow(
      "inputs[1]: 124 bytes, but a float32[8,4] input needs 128",
    );
    await expect(client.executeSharded(program, [X, Y], { chunkBytes: 8 << 20 })).rejects.toThrow(
      RangeError,
    );
    const into = [new Int32Array(1), [0, 0] as unknown as Float32Array];
    await expect(client.executeSharded(program, [X, Y], { into })).rejects.toThrow(
      "into[1]: an array, not an ArrayBufferView (a typed array, DataView or Buffer)",
    );
    // A program that declares its outputs has `into` checked against them before it is sent.
    const declared = { ...example("affine", [f32([8, 4], "x", "y"), f32([]), f32([])]) };
    declared.outputs = treeFlatten<ShapeDtypeStruct>(f32([8, 4], "x", "y"));
    const scalars = [new Float32Array(1), new Float32Array(1)];
    await expect(
      client.executeSharded(declared, [X, ...scalars], { into: [new Float32Array(16)] }),
    ).rejects.toThrow("into[0]: 64 bytes, but the float32[8,4] output has 128");
    await expect(
      client.executeSharded(declared, [X, ...scalars], { into: [X, X] }),
    ).rejects.toThrow("into: 2 buffers for 1 output leaves");
    expect(client.programLoads).toBe(0);
  });

  test("into a Float32Array, a Buffer and a DataView at an offset: each gets its output", async () => {
    const client = await connect(worker);
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    // Leaves in key order: count_positive int32[], doubled f32[8,4], positive bool[8,4],
    // row_sums f32[8], sum f32[8,4].
    const big = new Uint8Array(64).fill(0xee);
    const rowSums = new DataView(big.buffer, 12, 32);
    const sums = new Float32Array(new ArrayBuffer(160), 16, 32);
    const into = [new Int32Array(1), new Float32Array(32), Buffer.alloc(32), rowSums, sums];
    const { outputs, data } = await client.executeSharded(program, [X, Y], { into });
    expectSummarized(X, outputs, data);
    for (const [i, d] of data.entries()) {
      expect([d.buffer, d.byteOffset, d.byteLength]).toEqual([
        into[i].buffer,
        into[i].byteOffset,
        into[i].byteLength,
      ]);
    }
    expect(into[1]).toEqual(X.map((v) => v * 2));
    const rows = Float32Array.from(range(8), (r) => rowSums.getFloat32(4 * r, true));
    expect(rows).toEqual(Float32Array.from(range(8), (r) => 4 * (4 * r - 10) + 6));
    expect(sums).toEqual(X.map((v) => v + 0.5));
    expect([...big.subarray(0, 12), ...big.subarray(44)].every((b) => b === 0xee)).toBe(true);
    // One of the wrong size is refused once the worker names the outputs, and none is written.
    const short = new Float32Array(16).fill(7);
    await expect(
      client.executeSharded(program, [X, Y], { into: [into[0], short, ...into.slice(2)] }),
    ).rejects.toThrow("into[1]: 64 bytes, but the float32[8,4] output has 128");
    expect(short.every((v) => v === 7)).toBe(true);
  });

  test("a stream that stops without `end` is INVALID_ARGUMENT, and the worker serves on", async () => {
    const stub = new ColocatedWorkerServiceClient(worker.target, credentials.createInsecure());
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    const call = stub.executeSharded(new Metadata());
    const error = new Promise<{ code: number; details: string }>((resolve) =>
      call.on("error", resolve),
    );
    call.on("data", () => undefined);
    const start: ExecuteShardedRequest = {
      part: {
        $case: "start",
        value: { version: 0, program: lowerProgramPayload(program, { targetMinorVersion: 0 }) },
      },
    };
    call.write(start);
    call.write({
      part: {
        $case: "chunk",
        value: {
          leaf: 0,
          index: { start: [0n, 0n], stop: [4n, 1n] },
          offset: 0n,
          data: new Uint8Array(8),
          last: false,
        },
      },
    });
    call.end();
    const { code, details } = await error;
    stub.close();
    expect(code).toBe(status.INVALID_ARGUMENT);
    expect(details).toBe(
      "the input stream ended without `end` after 1 chunks; inputs[0] shard [0:4,0:1] has 8 of 16 bytes",
    );
    const client = await connect(worker);
    const { data } = await client.executeSharded(program, [X, Y]);
    expect(floats(data[1])).toEqual(X.map((v) => v * 2));
  });

  test("a client that disconnects mid-upload gets CANCELLED, and the worker serves on", async () => {
    const client = await connect(worker);
    const n = 1024;
    const program = example("affine", [f32([n, n], "x", "y"), f32([]), f32([n], "y")]);
    const x = new Float32Array(n * n);
    const disconnect = new AbortController();
    let sent = 0;
    const call = client.executeSharded(program, [x, Float32Array.of(1), new Float32Array(n)], {
      chunkBytes: 4 << 10,
      signal: disconnect.signal,
      onProgress: (p) => {
        sent = p.sentBytes;
        if (sent >= 64 << 10) disconnect.abort();
      },
    });
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe(status.CANCELLED);
    expect(sent).toBeLessThan(4 * n * n); // it stopped sending
    const { data } = await client.executeSharded(
      program,
      [x, Float32Array.of(1), Float32Array.from(range(n))],
      {},
    );
    expect(floats(data[0]).slice(n - 2, n + 2)).toEqual(Float32Array.of(n - 2, n - 1, 0, 1));
  });

  test("a worker killed mid-stream gives UNAVAILABLE saying it died", async () => {
    const client = await connect(doomed);
    const n = 1024;
    const program = example("affine", [f32([n, n], "x", "y"), f32([]), f32([n], "y")]);
    let killed = false;
    const call = client.executeSharded(
      program,
      [new Float32Array(n * n), Float32Array.of(1), new Float32Array(n)],
      {
        chunkBytes: 4 << 10,
        onProgress: (p) => {
          if (!killed && p.sentBytes >= 64 << 10) {
            killed = true;
            doomed.process.kill("SIGKILL");
          }
        },
      },
    );
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(killed).toBe(true);
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe(status.UNAVAILABLE);
    expect((error as WorkerError).message).toMatch(/ExecuteSharded on .* died during the call/);
  });
});
