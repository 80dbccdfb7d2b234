import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from "@grpc/grpc-js";
import {
  ExecuteShardedResponseSchema,
  RelayResponseSchema,
  SessionResponseSchema,
} from "../../gen/es/colocated/v1/service_pb";
import { ProgramPayload, SpecsPayload } from "../../gen/ts/colocated/v1/payload";
import {
  type ExecuteShardedRequest,
  ExecuteShardedResponse,
  GetTopologyResponse,
  type GetVersionRequest,
  type GetVersionResponse,
  type LoadProgramRequest,
  type LoadProgramResponse,
  RelayedEnd,
  RelayedMessage,
  RelayedTaken,
  type RelayRequest,
  ColocatedWorkerServiceService as Service,
  type SessionCall,
  SessionRequest,
  SessionResponse,
  ShardChunk,
} from "../../gen/ts/colocated/v1/service";
import { decodeProgram } from "../../src/decode";
import { lowerSpecsPayload } from "../../src/encode";
import { deviceIdsOf } from "../../src/model/device-list";
import type { Program } from "../../src/model/program";
import type { ShapeDtypeStruct } from "../../src/model/shape-dtype-struct";
import { negotiateVersion } from "../../src/rpc/client/negotiate";
import { arrayByteLength, elementByteLength } from "../../src/rpc/sharded/array-bytes";
import { distinctShards, type ShardIndex } from "../../src/shard-indices";
import { SCHEMA_MINOR_VERSION } from "../../src/version";

/**
 * Fixed-answer servers: real gRPC servers of ColocatedWorkerService that stand in
 * for the workers of a JAX job far larger than this machine holds, so the controller alone can
 * be measured from 16 members to 1,024. Each answers as the worker would from a fixed topology
 * (process p of `processes`, `devices` CPU devices each, numbered as JAX numbers them), loads
 * any program, and answers ExecuteSharded with output specs and shards of the right shapes and
 * byte counts (the program's declared outputs; each byte is the member's process index, so an
 * assembled output shows whose shard landed where). It runs nothing: like the load bench's echo
 * (bench/load/load_echo.py), it is the cost of the calls around the work. It does check what it is
 * sent: a start first, exactly the input bytes its devices hold, then the end.
 *
 * Each also serves Session (unless started with `sessions: false`, as a worker older than it
 * would be: GetVersion then says `sessions: false` and Session is UNIMPLEMENTED). Each call on
 * a session is checked as a stream is (its version, a loaded handle, exactly the input bytes
 * its devices hold, each shard one chunk marked last) and answered as ExecuteSharded answers,
 * in one SessionResponse: output specs, every output shard one chunk, end. Outputs past
 * 4 MiB in all go in parts of at most 1 MiB of 1 MiB chunks, the specs in the first part and
 * `end` in the last. A member's parts are encoded once per program; a call writes only its id
 * in front of them. The mode applies per call: "error" answers a status part at once, "hang"
 * answers nothing but a `cancel` of that call (CANCELLED), "drop" ends the session (UNAVAILABLE,
 * as a worker that went away) and refuses another (RESOURCE_EXHAUSTED, as a worker whose
 * --max-sessions are taken); ExecuteSharded answers as "ok" in that mode. "unreached" answers
 * as "ok", but a relay reports the member's session ended UNAVAILABLE before it opens, as a
 * relaying worker that cannot reach it does.
 */

/**
 * A member's next calls: answer, fail at once (INTERNAL), never answer, (sessions only) end
 * the session and refuse another, or answer but be out of its relay's reach.
 */
export type FixedMode = "ok" | "error" | "hang" | "drop" | "unreached";

/** The limits a fixed-answer member states in GetVersion, as a worker's defaults would. */
const LIMITS = { maxConcurrentCalls: 16, maxInflightBytes: 1n << 30n };

/** Output chunks are at most this long, as the worker's are. */
const CHUNK_BYTES = 1 << 20;

/** A session call's outputs up to this many bytes in all are one part, each shard one chunk. */
const ONE_PART_BYTES = 4 << 20;

/** How each fixed-answer server is started. */
export interface FixedOptions {
  /** Whether it serves Session and says so in GetVersion (default true). */
  sessions?: boolean;
}

/** The device ids of process p: p × 2048 + d, as JAX numbers CPU devices of a job. */
export function fixedDeviceId(process: number, device: number): number {
  return process * 2048 + device;
}

/** The process of a fixed job that holds a device. */
function processOf(id: number): number {
  return Math.floor(id / 2048);
}

/** One output shard a member holds. */
interface OutputShard {
  leaf: number;
  index: ShardIndex;
  bytes: number;
}

/**
 * What one member answers for one program: the input it holds, its output shards, and its
 * answers (ExecuteSharded's messages, a session call's parts), each encoded once, when first
 * asked for.
 */
class Answer {
  private sharded?: Uint8Array[];
  private session?: Buffer[];
  private sessionAsBefore?: Buffer[];

  constructor(
    readonly process: number,
    readonly specs: Uint8Array,
    readonly inputBytes: number,
    readonly inputShards: number,
    readonly outputs: readonly OutputShard[],
  ) {}

  /** ExecuteSharded's answer: output specs, each shard in chunks of at most 1 MiB, end. */
  shardedMessages(): Uint8Array[] {
    if (!this.sharded) {
      const response = (part: ExecuteShardedResponse["part"]) =>
        ExecuteShardedResponse.encode({ part }).finish();
      this.sharded = [
        new BinaryWriter()
          .tag(SHARDED.outputSpecs.number, WireType.LengthDelimited)
          .bytes(this.specs)
          .finish(),
      ];
      for (const shard of this.outputs) {
        for (const chunk of chunksOf(shard, this.process, CHUNK_BYTES)) {
          this.sharded.push(response({ $case: "chunk", value: chunk }));
        }
      }
      this.sharded.push(response({ $case: "end", value: true }));
    }
    return this.sharded;
  }

  /**
   * A session call's answer, without its id: one part (output specs, each shard one chunk,
   * end) while the outputs come to 4 MiB at most; past that, chunks of at most 1 MiB, in
   * parts of at most 1 MiB, the specs in the first and `end` in the last. Each part leaves
   * ID_ROOM bytes in front for the id (sessionSerialize). `asBefore`: the session sent these
   * specs last, so the first part says so in their place, as the worker does.
   */
  sessionParts(asBefore = false): Buffer[] {
    if (asBefore) {
      this.sessionAsBefore ??= this.sessionParts().map((part, i) => {
        if (i > 0) return part;
        const specsField = new BinaryWriter()
          .tag(SESSION.outputSpecs.number, WireType.LengthDelimited)
          .bytes(this.specs)
          .finish();
        const flag = new BinaryWriter()
          .tag(SESSION.outputSpecsAsBefore.number, WireType.Varint)
          .bool(true)
          .finish();
        const rest = part.subarray(ID_ROOM + specsField.length);
        return Buffer.concat([part.subarray(0, ID_ROOM), flag, rest]);
      });
      return this.sessionAsBefore;
    }
    if (!this.session) {
      const total = this.outputs.reduce((n, s) => n + s.bytes, 0);
      const split = total > ONE_PART_BYTES;
      const parts: ShardChunk[][] = [[]];
      let size = 0;
      for (const shard of this.outputs) {
        for (const chunk of chunksOf(shard, this.process, split ? CHUNK_BYTES : shard.bytes)) {
          if (split && size > 0 && size + chunk.data.length > CHUNK_BYTES) {
            parts.push([]);
            size = 0;
          }
          parts[parts.length - 1].push(chunk);
          size += chunk.data.length;
        }
      }
      this.session = parts.map((chunks, i) => {
        const part = new BinaryWriter().raw(new Uint8Array(ID_ROOM));
        if (i === 0) {
          part.tag(SESSION.outputSpecs.number, WireType.LengthDelimited).bytes(this.specs);
        }
        for (const chunk of chunks) {
          part
            .tag(SESSION.outputs.number, WireType.LengthDelimited)
            .bytes(ShardChunk.encode(chunk).finish());
        }
        if (i === parts.length - 1) part.tag(SESSION.end.number, WireType.Varint).bool(true);
        return raw(part.finish());
      });
    }
    return this.session;
  }
}

const SHARDED = ExecuteShardedResponseSchema.field;
const SESSION = SessionResponseSchema.field;
const RELAY_RESPONSE = RelayResponseSchema.field;

/** The bytes a part leaves in front for its id: the field's tag and a varint of 10 bytes at most. */
const ID_ROOM = new BinaryWriter().tag(SESSION.id.number, WireType.Varint).finish().length + 10;

/** A shard's chunks of at most `most` bytes, each byte the member's process index. */
function chunksOf(shard: OutputShard, p: number, most: number): ShardChunk[] {
  const chunks: ShardChunk[] = [];
  let offset = 0;
  do {
    const length = Math.min(most, shard.bytes - offset);
    chunks.push({
      leaf: shard.leaf,
      index:
        offset === 0
          ? { start: shard.index.start.map(BigInt), stop: shard.index.stop.map(BigInt) }
          : undefined,
      offset: BigInt(offset),
      data: new Uint8Array(length).fill(p & 0xff),
      last: offset + length === shard.bytes,
    });
    offset += length;
  } while (offset < shard.bytes);
  return chunks;
}

/** A loaded program, decoded once per process, and each member's answer to it. */
interface Loaded {
  program: Program;
  specs: Uint8Array;
  answers: Map<number, Answer>;
}

/**
 * One process's fixed-answer members of one job: the topology they share (its devices
 * encoded once), the programs loaded on any of them, and each member's mode.
 */
export class FixedJob {
  private readonly devicesBytes: Uint8Array;
  private readonly loaded = new Map<string, Loaded>();
  private readonly modes = new Map<number, FixedMode>();
  /** Emits "cancelled" with a member's process index when its client cancels its stream. */
  readonly events = new EventEmitter();
  /** Session and Relay streams its members took. */
  readonly opened = { sessions: 0, relays: 0 };
  /** The members this process serves, by target: those its relays answer for. */
  readonly local = new Map<string, number>();

  constructor(
    readonly processes: number,
    readonly devices: number,
  ) {
    const all = [];
    for (let p = 0; p < processes; p++) {
      for (let d = 0; d < devices; d++) {
        all.push({
          id: BigInt(fixedDeviceId(p, d)),
          processIndex: p,
          platform: "cpu",
          kind: "cpu",
          coords: [],
          coreOnChip: 0,
        });
      }
    }
    this.devicesBytes = GetTopologyResponse.encode({
      processCount: 0,
      processIndex: 0,
      devices: all,
    }).finish();
  }

  /** Sets a member's mode for its next calls. */
  /** Forgets every program, as a worker that evicted them: their handles get NOT_FOUND. */
  forget(): void {
    this.loaded.clear();
  }

  setMode(member: number, mode: FixedMode): void {
    this.modes.set(member, mode);
  }

  /** Member `process`'s GetTopology answer: its two fields, then the job's devices. */
  topology(process: number): Uint8Array {
    const head = GetTopologyResponse.encode({
      processCount: this.processes,
      processIndex: process,
      devices: [],
    }).finish();
    return Buffer.concat([head, this.devicesBytes]);
  }

  /** Loads a program (once per process), and returns its handle: the SHA-256 of its bytes. */
  load(program: ProgramPayload): Uint8Array {
    const bytes = ProgramPayload.encode(program).finish();
    const digest = createHash("sha256").update(bytes).digest();
    const key = digest.toString("hex");
    if (!this.loaded.has(key)) {
      const model = decodeProgram(bytes);
      if (!model.outputs)
        throw new Error("a fixed-answer member needs a program with declared outputs");
      const specs = SpecsPayload.encode(
        lowerSpecsPayload(model.outputs.treedef, model.outputs.leaves),
      ).finish();
      this.loaded.set(key, { program: model, specs, answers: new Map() });
    }
    return digest;
  }

  /** Member `process`'s answer to a loaded program; undefined when it is not loaded. */
  answer(process: number, digest: Uint8Array): Answer | undefined {
    const loaded = this.loaded.get(Buffer.from(digest).toString("hex"));
    if (!loaded) return undefined;
    let answer = loaded.answers.get(process);
    if (!answer) {
      answer = memberAnswer(loaded, process);
      loaded.answers.set(process, answer);
    }
    return answer;
  }

  mode(member: number): FixedMode {
    return this.modes.get(member) ?? "ok";
  }
}

/** The shards of `spec` that process `p` holds (an unsharded leaf: the program's first device). */
function shardsOn(spec: ShapeDtypeStruct, p: number, first: number): ShardIndex[] {
  if (spec.sharding === null) {
    return processOf(first) === p
      ? [{ start: spec.shape.map(() => 0), stop: [...spec.shape] }]
      : [];
  }
  return distinctShards(spec.sharding, spec.shape)
    .filter((s) => s.devices.some((d) => processOf(d) === p))
    .map((s) => s.index);
}

function shardBytes(spec: ShapeDtypeStruct, index: ShardIndex): number {
  return index.stop.reduce(
    (n, stop, d) => n * (stop - index.start[d]),
    elementByteLength(spec) ?? 0,
  );
}

/** A member's answer: its input byte and shard counts, and its output shards. */
function memberAnswer(loaded: Loaded, p: number): Answer {
  const { program } = loaded;
  const first = deviceIdsOf(program.devices)[0];
  let inputBytes = 0;
  let inputShards = 0;
  for (const spec of program.inputs.leaves) {
    for (const index of shardsOn(spec, p, first)) {
      inputBytes += shardBytes(spec, index);
      inputShards += 1;
    }
  }
  const outputs: OutputShard[] = [];
  const leaves = program.outputs?.leaves ?? [];
  leaves.forEach((spec, leaf) => {
    if (arrayByteLength(spec) === undefined)
      throw new Error("fixed-answer outputs need a fixed-size dtype");
    for (const index of shardsOn(spec, p, first)) {
      outputs.push({ leaf, index, bytes: shardBytes(spec, index) });
    }
  });
  return new Answer(p, loaded.specs, inputBytes, inputShards, outputs);
}

const raw = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** What a session writes: a message's bytes, or a cached part of an answer and its call's id. */
type SessionOut = Buffer | { id: bigint; part: Buffer };

/**
 * A session message's bytes. A cached part gets its call's id written in the room left in
 * front of it, and is sent from there: grpc-js copies the bytes as soon as this returns, so
 * the part serves every call, one at a time.
 */
function sessionSerialize(out: SessionOut): Buffer {
  if (Buffer.isBuffer(out)) return out;
  const id = new BinaryWriter().tag(SESSION.id.number, WireType.Varint).uint64(out.id).finish();
  const at = ID_ROOM - id.length;
  out.part.set(id, at);
  return out.part.subarray(at);
}

/** The service definition with raw answers where the member sends bytes made once. */
const DEFINITION = {
  ...Service,
  executeSharded: { ...Service.executeSharded, responseSerialize: raw },
  getTopology: { ...Service.getTopology, responseSerialize: raw },
  session: { ...Service.session, responseSerialize: sessionSerialize },
  relay: { ...Service.relay, responseSerialize: raw },
};

/** Member `process` of `job`: the service's handlers. */
function handlers(job: FixedJob, process: number, sessions: boolean) {
  return {
    getVersion(
      call: ServerUnaryCall<GetVersionRequest, GetVersionResponse>,
      done: sendUnaryData<GetVersionResponse>,
    ) {
      const server = { minVersion: 0, maxVersion: SCHEMA_MINOR_VERSION };
      const client = call.request.client ?? server;
      try {
        const version = negotiateVersion(client, server);
        done(null, { server, version, limits: LIMITS, sessions, relays: sessions });
      } catch (error) {
        done({ code: status.FAILED_PRECONDITION, details: (error as Error).message });
      }
    },
    getTopology(_call: ServerUnaryCall<unknown, Buffer>, done: sendUnaryData<Buffer>) {
      done(null, raw(job.topology(process)));
    },
    loadProgram(
      call: ServerUnaryCall<LoadProgramRequest, LoadProgramResponse>,
      done: sendUnaryData<LoadProgramResponse>,
    ) {
      try {
        const digest = job.load(call.request.program ?? ProgramPayload.fromPartial({}));
        done(null, { handle: { digest } });
      } catch (error) {
        done({ code: status.INVALID_ARGUMENT, details: (error as Error).message });
      }
    },
    execute(_call: unknown, done: sendUnaryData<unknown>) {
      done({ code: status.UNIMPLEMENTED, details: "a fixed-answer member serves ExecuteSharded" });
    },
    executeSharded(call: ServerDuplexStream<ExecuteShardedRequest, Buffer>) {
      sharded(call, job, process);
    },
    session(call: ServerDuplexStream<SessionRequest, SessionOut>) {
      if (!sessions) {
        call.emit("error", { code: status.UNIMPLEMENTED, details: "started without sessions" });
      } else if (job.mode(process) === "drop") {
        const details = noMoreSessions(process);
        call.emit("error", { code: status.RESOURCE_EXHAUSTED, details });
      } else session(call, job, process);
    },
    relay(call: ServerDuplexStream<RelayRequest, Buffer>) {
      if (!sessions) {
        call.emit("error", { code: status.UNIMPLEMENTED, details: "started without sessions" });
      } else relay(call, job);
    },
  };
}

/** Why a member in mode "drop" refuses a session, as a worker whose --max-sessions are taken. */
function noMoreSessions(process: number): string {
  return `fixed-answer member ${process} serves no more sessions (--max-sessions)`;
}

/** One ExecuteSharded stream: start, exactly this member's input bytes, end; then the answer. */
function sharded(
  call: ServerDuplexStream<ExecuteShardedRequest, Buffer>,
  job: FixedJob,
  process: number,
): void {
  let answer: Answer | undefined;
  let received = 0;
  const fail = (code: status, details: string) => {
    call.emit("error", { code, details });
  };
  const mode = job.mode(process);
  call.on("cancelled", () => job.events.emit("cancelled", process));
  call.on("data", (request: ExecuteShardedRequest) => {
    const part = request.part;
    if (part?.$case === "start") {
      if (mode === "error")
        return fail(status.INTERNAL, `fixed-answer member ${process} told to fail`);
      answer = job.answer(process, part.value.handle?.digest ?? new Uint8Array());
      if (!answer) fail(status.NOT_FOUND, "no program loaded with that handle");
    } else if (part?.$case === "chunk") {
      received += part.value.data.length;
    } else if (part?.$case === "end") {
      if (mode === "hang" || !answer) return;
      if (received !== answer.inputBytes) {
        return fail(
          status.INVALID_ARGUMENT,
          `member ${process} holds ${answer.inputBytes} input bytes, was sent ${received}`,
        );
      }
      for (const message of answer.shardedMessages()) call.write(raw(message));
      call.end();
    }
  });
}

/** Where a fixed-answer session writes: its answers' parts, and the status that ends it. */
interface SessionOutlet {
  write(out: SessionOut): void;
  end(code: status, details: string): void;
}

/**
 * One session's calls on a fixed-answer member, whether its stream is its own (session()) or
 * a relay's (relay()): each call checked and answered in the member's mode at the time; a
 * hanging call is answered only when cancelled.
 */
class FixedSession {
  private readonly hanging = new Set<bigint>();
  /** The output specs this session sent last (each program's are one array). */
  private lastSpecs: Uint8Array | undefined;

  constructor(
    private readonly job: FixedJob,
    private readonly process: number,
    private readonly outlet: SessionOutlet,
  ) {}

  /** Whether no call hangs. */
  get idle(): boolean {
    return this.hanging.size === 0;
  }

  /** The stream is gone: nothing is answered any more. */
  forget(): void {
    this.hanging.clear();
  }

  /** One SessionRequest; false when it ended the session. */
  request(request: SessionRequest): boolean {
    const { job, process } = this;
    const part = request.part;
    if (part?.$case === "cancel") {
      if (!this.hanging.delete(part.value)) return true; // ended, or never sent
      this.fail(part.value, status.CANCELLED, `call ${part.value} cancelled by the client`);
      job.events.emit("cancelled", process);
      return true;
    }
    if (part?.$case !== "call") {
      this.outlet.end(status.INVALID_ARGUMENT, "a SessionRequest of no part");
      return false;
    }
    const { id } = part.value;
    const mode = job.mode(process);
    if (mode === "drop") {
      this.outlet.end(status.UNAVAILABLE, `fixed-answer member ${process} dropped its session`);
      return false;
    }
    if (mode === "error") {
      this.fail(id, status.INTERNAL, `fixed-answer member ${process} told to fail`);
      return true;
    }
    if (mode === "hang") {
      this.hanging.add(id);
      return true;
    }
    const answer = checkCall(part.value, job, process);
    if (!(answer instanceof Answer)) {
      this.fail(id, answer.code, answer.message);
      return true;
    }
    const asBefore = answer.specs === this.lastSpecs;
    this.lastSpecs = answer.specs;
    for (const message of answer.sessionParts(asBefore)) this.outlet.write({ id, part: message });
    return true;
  }

  private fail(id: bigint, code: status, message: string): void {
    this.outlet.write(
      raw(
        SessionResponse.encode({
          id,
          outputs: [],
          end: false,
          status: { code, message },
          outputSpecsAsBefore: false,
        }).finish(),
      ),
    );
  }
}

/**
 * One Session stream: its calls answered by a FixedSession. Once the client has sent its last
 * call, the stream ends when no call hangs.
 */
function session(
  call: ServerDuplexStream<SessionRequest, SessionOut>,
  job: FixedJob,
  process: number,
): void {
  call.sendMetadata(new Metadata()); // taken: as the worker, headers before any call
  job.opened.sessions += 1;
  let closed = false;
  const fixed = new FixedSession(job, process, {
    write: (out) => call.write(out),
    end: (code, details) => call.emit("error", { code, details }),
  });
  const settle = () => {
    if (closed && fixed.idle) call.end();
  };
  call.on("cancelled", () => {
    fixed.forget();
    job.events.emit("cancelled", process);
  });
  call.on("end", () => {
    closed = true;
    settle();
  });
  call.on("data", (request: SessionRequest) => {
    if (fixed.request(request)) settle();
  });
}

/**
 * One Relay stream on a fixed-answer member: each child's calls answered by a FixedSession of
 * its own, as the child would answer them over a session, in place of forwarding them (the
 * children are members of this process, found by target in `job.local`). What the controller
 * sends and receives is what a worker's relay would have it send and receive; the relaying
 * member's own work of forwarding is not modelled. Each child's first session is opened as it
 * is given and reported taken, refused (mode "drop") or unreached (mode "unreached"), as a
 * worker's relay reports them; a child's session that ends is reported as a relay reports it;
 * a child elsewhere ends UNAVAILABLE.
 */
function relay(call: ServerDuplexStream<RelayRequest, Buffer>, job: FixedJob): void {
  call.sendMetadata(new Metadata());
  job.opened.relays += 1;
  const processOf = new Map<number, number | undefined>();
  const sessions = new Map<number, { number: number; fixed?: FixedSession }>();
  let batch: BinaryWriter | undefined;
  let closed = false;
  const out = () => {
    if (batch === undefined) {
      batch = new BinaryWriter();
      process.nextTick(() => {
        const bytes = batch?.finish();
        batch = undefined;
        if (bytes !== undefined) call.write(raw(bytes));
        settle();
      });
    }
    return batch;
  };
  const settle = () => {
    const idle = [...sessions.values()].every((s) => s.fixed?.idle ?? true);
    if (closed && batch === undefined && idle) call.end();
  };
  const ended = (child: number, number: number, code: status, message: string) => {
    sessions.set(child, { number });
    out()
      .tag(RELAY_RESPONSE.ends.number, WireType.LengthDelimited)
      .bytes(RelayedEnd.encode({ child, session: number, status: { code, message } }).finish());
  };
  const open = (child: number, number: number): FixedSession | undefined => {
    const p = processOf.get(child);
    if (p === undefined) {
      ended(
        child,
        number,
        status.UNAVAILABLE,
        `a fixed-answer relay reaches only its process's members`,
      );
      return undefined;
    }
    if (job.mode(p) === "drop") {
      ended(child, number, status.RESOURCE_EXHAUSTED, noMoreSessions(p));
      return undefined;
    }
    if (job.mode(p) === "unreached") {
      ended(
        child,
        number,
        status.UNAVAILABLE,
        `fixed-answer member ${p} is out of its relay's reach`,
      );
      return undefined;
    }
    const fixed = new FixedSession(job, p, {
      write: (o) =>
        out()
          .tag(RELAY_RESPONSE.messages.number, WireType.LengthDelimited)
          .bytes(
            RelayedMessage.encode({
              child,
              session: number,
              message: sessionSerialize(o),
            }).finish(),
          ),
      end: (code, details) => ended(child, number, code, details),
    });
    sessions.set(child, { number, fixed });
    out()
      .tag(RELAY_RESPONSE.taken.number, WireType.LengthDelimited)
      .bytes(RelayedTaken.encode({ child, session: number }).finish());
    return fixed;
  };
  call.on("cancelled", () => {
    for (const s of sessions.values()) s.fixed?.forget();
  });
  call.on("end", () => {
    closed = true;
    for (const [child, s] of sessions) {
      if (s.fixed?.idle) ended(child, s.number, status.OK, "");
    }
    settle();
  });
  call.on("data", (request: RelayRequest) => {
    for (const c of request.children) {
      processOf.set(c.child, job.local.get(c.target));
      if (!sessions.has(c.child)) open(c.child, 0); // at once, as a worker's relay does
    }
    for (const m of request.messages) {
      const current = sessions.get(m.child);
      let fixed = current?.fixed;
      if (current === undefined || m.session > current.number) fixed = open(m.child, m.session);
      else if (m.session < current.number) continue; // a session over: its end was sent
      fixed?.request(SessionRequest.decode(m.message));
    }
  });
}

/** The answer to a session call, or why it is refused (a check as sharded() makes). */
function checkCall(
  call: SessionCall,
  job: FixedJob,
  process: number,
): Answer | { code: status; message: string } {
  const invalid = (message: string) => ({
    code: status.INVALID_ARGUMENT,
    message: `fixed-answer member ${process}: ${message}`,
  });
  const start = call.start;
  if (!start) return invalid("a session call needs its start");
  if (start.version > SCHEMA_MINOR_VERSION) {
    return invalid(`version 1.${start.version} is past this member's 1.${SCHEMA_MINOR_VERSION}`);
  }
  const answer = job.answer(process, start.handle?.digest ?? new Uint8Array());
  if (!answer) return { code: status.NOT_FOUND, message: "no program loaded with that handle" };
  let received = 0;
  for (const chunk of call.inputs) {
    if (!chunk.last || chunk.offset !== 0n || chunk.index === undefined) {
      return invalid("each input shard of a session call is one chunk, its index set, marked last");
    }
    received += chunk.data.length;
  }
  if (call.inputs.length !== answer.inputShards || received !== answer.inputBytes) {
    return invalid(
      `holds ${answer.inputShards} input shards of ${answer.inputBytes} bytes, was sent ` +
        `${call.inputs.length} of ${received}`,
    );
  }
  return answer;
}

/** A fixed-answer member's server, on a port of its own. */
export interface FixedServer {
  process: number;
  target: string;
  server: Server;
}

/** Starts the members `processes` of `job` on 127.0.0.1, each a server on a port of its own. */
export function startFixedServers(
  job: FixedJob,
  processes: readonly number[],
  options: FixedOptions = {},
): Promise<FixedServer[]> {
  const sessions = options.sessions ?? true;
  return Promise.all(
    processes.map(
      (process) =>
        new Promise<FixedServer>((resolve, reject) => {
          const server = new Server({
            "grpc.max_receive_message_length": 256 << 20,
            "grpc.max_send_message_length": 256 << 20,
          });
          server.addService(DEFINITION, handlers(job, process, sessions));
          server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, port) => {
            if (error) return reject(error);
            const target = `127.0.0.1:${port}`;
            job.local.set(target, process);
            resolve({ process, target, server });
          });
        }),
    ),
  );
}

/** Stops servers at once, calls in flight cancelled. */
export function stopFixedServers(servers: readonly FixedServer[]): void {
  for (const s of servers) s.server.forceShutdown();
}
