import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  type Client,
  type ClientDuplexStream,
  credentials,
  type StatusObject,
  status,
} from "@grpc/grpc-js";
import { SessionResponseSchema } from "../gen/es/colocated/v1/service_pb";
import {
  ColocatedWorkerServiceClient,
  type ExecuteShardedResponse,
  type ExecuteStart,
  type GetVersionResponse,
  type SessionCall,
  SessionRequest,
  SessionResponse,
  type ShardChunk,
} from "../gen/ts/colocated/v1/service";
import {
  DeviceList,
  FunctionRef,
  lowerProgramPayload,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import { callInputs } from "../src/rpc";
import { SCHEMA_MINOR_VERSION } from "../src/version";
import {
  FixedJob,
  type FixedServer,
  startFixedServers,
  stopFixedServers,
} from "./support/group-fixed-service";
import { groupCalls } from "./support/group-programs";

// Session on the fixed-answer members (test/support/group-fixed-service.ts), driven as a raw bidi
// stream of bytes: each call answered in one message (or, past 4 MiB of outputs, in parts),
// its status part when it fails or is cancelled, and GetVersion saying whether it serves it.

const PROCESSES = 2;
const DEVICES = 2;
const IDS = [0, 1, 2048, 2049]; // fixedDeviceId(p, d)
const SESSION = "/colocated.v1.ColocatedWorkerService/Session";
const OPTIONS = { "grpc.max_receive_message_length": 256 << 20 };

const mesh = new Mesh(new DeviceList(IDS), [PROCESSES, DEVICES], ["x", "y"]);
const f32 = (shape: number[], ...axes: (string | null)[]) =>
  new ShapeDtypeStruct(shape, "float32", new NamedSharding(mesh, new PartitionSpec(...axes)));

/** A program of one small input, replicated, and one output float32[rows, cols] over every device. */
function bigOutput(rows: number, cols: number): Program {
  return {
    function: new FunctionRef("colocated_wire.examples", "affine"),
    inputs: callInputs([f32([4])]),
    outputs: treeFlatten<ShapeDtypeStruct>(f32([rows, cols], "x", "y")),
    devices: mesh.devices,
  };
}

const chunk = (leaf: number, start: number[], stop: number[], bytes: number): ShardChunk => ({
  leaf,
  index: { start: start.map(BigInt), stop: stop.map(BigInt) },
  offset: 0n,
  data: new Uint8Array(bytes),
  last: true,
});

/**
 * Member p's inputs to the group bench's small call (summarize on float32[8, 4] twice): x
 * split over "x" and "y" (two shards of 4 × 2), then split over "x" alone (one of 4 × 4).
 */
function smallInputs(p: number): ShardChunk[] {
  const rows = [4 * p, 4 * p + 4];
  return [
    chunk(0, [rows[0], 0], [rows[1], 2], 32),
    chunk(0, [rows[0], 2], [rows[1], 4], 32),
    chunk(1, [rows[0], 0], [rows[1], 4], 64),
  ];
}

/** A session stream of bytes, its messages as they come, and its status once it ends. */
class RawSession {
  readonly stream: ClientDuplexStream<Buffer, Buffer>;
  /** Every message received, in order. */
  readonly received: Buffer[] = [];
  readonly status: Promise<StatusObject>;
  private read = 0;
  private waiting: ((message: Buffer | undefined) => void) | undefined;
  private over = false;

  constructor(client: Client) {
    const same = (b: Buffer) => b;
    this.stream = client.makeBidiStreamRequest(SESSION, same, same);
    this.stream.on("data", (message: Buffer) => {
      this.received.push(message);
      this.wake();
    });
    this.stream.on("error", () => {}); // its status says
    this.status = new Promise((resolve) => {
      this.stream.on("status", (s: StatusObject) => {
        this.over = true;
        this.wake();
        resolve(s);
      });
    });
  }

  send(request: SessionRequest): void {
    this.stream.write(Buffer.from(SessionRequest.encode(request).finish()));
  }

  call(value: Partial<SessionCall> & { id: bigint }): void {
    const call: SessionCall = { inputs: [], timeoutMs: 0n, jobCallId: "", ...value };
    this.send({ part: { $case: "call", value: call } });
  }

  cancel(id: bigint): void {
    this.send({ part: { $case: "cancel", value: id } });
  }

  /** The next message not yet read, decoded; fails if the stream ends first. */
  async next(): Promise<SessionResponse> {
    if (this.read === this.received.length && !this.over) {
      await new Promise<void>((resolve) => {
        this.waiting = () => resolve();
      });
    }
    const message = this.received[this.read];
    if (message === undefined) throw new Error("the session ended before its next message");
    this.read += 1;
    return SessionResponse.decode(message);
  }

  /** Half-closes, and resolves with the status once the server has ended the stream. */
  async close(): Promise<StatusObject> {
    this.stream.end();
    return this.status;
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(undefined);
  }
}

describe("a fixed-answer member's Session", () => {
  let job: FixedJob;
  let servers: FixedServer[];
  let without: FixedServer[];
  const clients: Client[] = [];
  let small: Program;
  let start: ExecuteStart;

  const client = (target: string) => {
    const c = new ColocatedWorkerServiceClient(target, credentials.createInsecure(), OPTIONS);
    clients.push(c);
    return c;
  };
  const session = (p: number) => new RawSession(client(servers[p].target));
  const load = (program: Program): ExecuteStart => ({
    version: SCHEMA_MINOR_VERSION,
    handle: { digest: job.load(lowerProgramPayload(program)) },
  });

  beforeAll(async () => {
    job = new FixedJob(PROCESSES, DEVICES);
    servers = await startFixedServers(job, [0, 1]);
    without = await startFixedServers(job, [0], { sessions: false });
    small = groupCalls(IDS, DEVICES, 8, true).small.program;
    start = load(small);
  });

  afterEach(() => {
    for (let p = 0; p < PROCESSES; p++) job.setMode(p, "ok");
    job.events.removeAllListeners("cancelled");
  });

  afterAll(() => {
    for (const c of clients) c.close();
    stopFixedServers([...servers, ...without]);
  });

  const version = (target: string) =>
    new Promise<GetVersionResponse>((resolve, reject) =>
      client(target).getVersion({}, (error, answer) => (error ? reject(error) : resolve(answer))),
    );

  /** Member p's ExecuteSharded answer to the small call, every message. */
  const sharded = (p: number) =>
    new Promise<ExecuteShardedResponse[]>((resolve, reject) => {
      const stream = client(servers[p].target).executeSharded();
      const answers: ExecuteShardedResponse[] = [];
      stream.on("data", (r: ExecuteShardedResponse) => answers.push(r));
      stream.on("error", reject);
      stream.on("end", () => resolve(answers));
      stream.write({ part: { $case: "start", value: start } });
      for (const c of smallInputs(p)) stream.write({ part: { $case: "chunk", value: c } });
      stream.write({ part: { $case: "end", value: true } });
      stream.end();
    });

  test("GetVersion says sessions, unless the member was started without", async () => {
    expect((await version(servers[1].target)).sessions).toBe(true);
    expect((await version(without[0].target)).sessions).toBe(false);
    const s = new RawSession(client(without[0].target));
    s.call({ id: 1n, start, inputs: smallInputs(0) });
    const ended = await s.close();
    expect(ended.code).toBe(status.UNIMPLEMENTED);
    expect(s.received).toEqual([]);
  });

  test("a small call is answered in one message: ExecuteSharded's answer, with its id", async () => {
    for (const p of [0, 1]) {
      const s = session(p);
      const ids = [1n, 2n ** 40n + 3n]; // a varint of one byte, and of six
      for (const id of ids) s.call({ id, start, inputs: smallInputs(p), jobCallId: "job-1" });
      expect((await s.close()).code).toBe(status.OK);
      expect(s.received).toHaveLength(2); // one message a call, and nothing more

      const answers = s.received.map((m) => SessionResponse.decode(m));
      expect(answers.map((a) => a.id)).toEqual(ids);
      const streamed = await sharded(p);
      const specs = streamed[0].part?.$case === "outputSpecs" ? streamed[0].part.value : undefined;
      const chunks = streamed.flatMap((r) => (r.part?.$case === "chunk" ? [r.part.value] : []));
      for (const a of answers) {
        expect(a.status).toBeUndefined();
        expect(a.end).toBe(true);
        expect(a.outputs).toEqual(chunks);
      }
      // The specs once; the second answer says they are as before, as the worker's does.
      expect(answers.map((a) => [a.outputSpecs, a.outputSpecsAsBefore])).toEqual([
        [specs, false],
        [undefined, true],
      ]);
      // summarize's five outputs, member p's shards: doubled and sum (two of 4 × 2 float32
      // each), row_sums (4 float32), positive (two of 4 × 2 bool), count_positive (one int32).
      const outputs = answers[0].outputs;
      expect(outputs).toHaveLength(8);
      expect(outputs.reduce((n, c) => n + c.data.length, 0)).toBe(64 + 64 + 16 + 16 + 4);
      for (const c of outputs) {
        expect(c).toMatchObject({ offset: 0n, last: true });
        expect(c.index).toBeDefined();
        expect(c.data.every((b) => b === p)).toBe(true);
      }
      // Each answer's bytes written once: only the id in front is written per call.
      const idField = (id: bigint) =>
        new BinaryWriter()
          .tag(SessionResponseSchema.field.id.number, WireType.Varint)
          .uint64(id)
          .finish();
      const third = session(p);
      for (const id of ids) third.call({ id, start, inputs: smallInputs(p), jobCallId: "job-1" });
      await third.close();
      for (const [k, id] of ids.entries()) {
        const [a, b] = [s.received[k], third.received[k]];
        expect(a.subarray(0, idField(id).length)).toEqual(Buffer.from(idField(id)));
        expect(b).toEqual(a);
      }
    }
  });

  test("a member told to fail answers INTERNAL at once, naming itself; its next call is answered", async () => {
    const s = session(1);
    job.setMode(1, "error");
    s.call({ id: 5n, start, inputs: smallInputs(1) });
    const failed = await s.next();
    expect(failed).toMatchObject({ id: 5n, end: false, outputs: [] });
    expect(failed.outputSpecs).toBeUndefined();
    expect(failed.status?.code).toBe(status.INTERNAL);
    expect(failed.status?.message).toContain("member 1");
    job.setMode(1, "ok"); // the mode is the member's at each call
    s.call({ id: 6n, start, inputs: smallInputs(1) });
    expect(await s.next()).toMatchObject({ id: 6n, end: true });
    expect((await s.close()).code).toBe(status.OK);
    expect(s.received).toHaveLength(2);
  });

  test("a hanging call is answered only when cancelled: CANCELLED, and the member sees it", async () => {
    const s = session(0);
    const seen = new Promise<number>((resolve) => job.events.once("cancelled", resolve));
    job.setMode(0, "hang");
    s.call({ id: 1n, start, inputs: smallInputs(0) });
    s.cancel(1n);
    const cancelled = await s.next();
    expect(cancelled).toMatchObject({ id: 1n, end: false, outputs: [] });
    expect(cancelled.status?.code).toBe(status.CANCELLED);
    expect(await seen).toBe(0);
    job.setMode(0, "ok");
    s.call({ id: 2n, start, inputs: smallInputs(0) });
    expect(await s.next()).toMatchObject({ id: 2n, end: true });
    s.cancel(2n); // ended: nothing to answer
    s.cancel(9n); // never sent: nothing either
    expect((await s.close()).code).toBe(status.OK);
    expect(s.received).toHaveLength(2);
  });

  test("a hanging call ends with its stream when the client cancels it", async () => {
    const s = session(1);
    s.call({ id: 1n, start, inputs: smallInputs(1) });
    expect(await s.next()).toMatchObject({ id: 1n, end: true }); // the member has the stream
    const seen = new Promise<number>((resolve) => job.events.once("cancelled", resolve));
    job.setMode(1, "hang");
    s.call({ id: 2n, start, inputs: smallInputs(1) });
    s.stream.cancel();
    expect(await seen).toBe(1);
    expect((await s.status).code).toBe(status.CANCELLED);
    expect(s.received).toHaveLength(1);
  });

  test("a call that is not what the member holds gets a status part, and the session goes on", async () => {
    const s = session(0);
    const [a, b, c] = smallInputs(0);
    s.call({ id: 1n, start, inputs: [a, b] });
    s.call({ id: 2n, start, inputs: [a, b, { ...c, last: false }] });
    s.call({ id: 3n, start: { ...start, version: SCHEMA_MINOR_VERSION + 1 }, inputs: [a, b, c] });
    s.call({ id: 4n, inputs: [a, b, c] });
    s.call({
      id: 5n,
      start: { version: SCHEMA_MINOR_VERSION, handle: { digest: new Uint8Array(32) } },
    });
    s.call({ id: 6n, start, inputs: [a, b, c] });
    expect((await s.close()).code).toBe(status.OK);
    const answers = s.received.map((m) => SessionResponse.decode(m));
    expect(answers.map((r) => [r.id, r.status?.code])).toEqual([
      [1n, status.INVALID_ARGUMENT],
      [2n, status.INVALID_ARGUMENT],
      [3n, status.INVALID_ARGUMENT],
      [4n, status.INVALID_ARGUMENT],
      [5n, status.NOT_FOUND],
      [6n, undefined],
    ]);
    expect(answers[0].status?.message).toContain(
      "member 0: holds 3 input shards of 128 bytes, was sent 2 of 64",
    );
    expect(answers[1].status?.message).toContain("one chunk");
    expect(answers[5].end).toBe(true);
  });

  test("outputs of 4 MiB are one part; past 4 MiB, parts of 1 MiB chunks, specs first, end last", async () => {
    const input = chunk(0, [0], [4], 16);
    // float32[1024, 2048] over 2 × 2 devices: member p holds two shards of 2 MiB.
    const s = session(1);
    s.call({ id: 1n, start: load(bigOutput(1024, 2048)), inputs: [input] });
    const one = await s.next();
    expect(one).toMatchObject({ id: 1n, end: true });
    expect(one.outputSpecs).toBeDefined();
    expect(one.outputs.map((c) => [c.offset, c.data.length, c.last])).toEqual([
      [0n, 2 << 20, true],
      [0n, 2 << 20, true],
    ]);

    // float32[2048, 2048]: two shards of 4 MiB, 8 MiB in all.
    s.call({ id: 2n, start: load(bigOutput(2048, 2048)), inputs: [input] });
    expect((await s.close()).code).toBe(status.OK);
    const parts = s.received.slice(1).map((m) => SessionResponse.decode(m));
    expect(parts).toHaveLength(8);
    parts.forEach((part, i) => {
      expect(part.id).toBe(2n);
      expect(part.status).toBeUndefined();
      expect(part.outputSpecs !== undefined).toBe(i === 0);
      expect(part.end).toBe(i === parts.length - 1);
    });
    const chunks = parts.flatMap((part) => part.outputs);
    expect(chunks.map((c) => [c.offset, c.data.length, c.index !== undefined, c.last])).toEqual(
      [0, 1].flatMap(() => [0, 1, 2, 3].map((k) => [BigInt(k << 20), 1 << 20, k === 0, k === 3])),
    );
    expect(chunks.every((c) => c.data.every((b) => b === 1))).toBe(true);
  });
});
