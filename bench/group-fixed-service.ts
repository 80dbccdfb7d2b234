import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import {
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from "@grpc/grpc-js";
import { ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  type ExecuteShardedRequest,
  ExecuteShardedResponse,
  GetTopologyResponse,
  type GetVersionRequest,
  type GetVersionResponse,
  type LoadProgramRequest,
  type LoadProgramResponse,
  ColocatedWorkerServiceService as Service,
} from "../gen/ts/colocated/v1/service";
import { decodeProgram } from "../src/decode";
import { lowerSpecsPayload } from "../src/encode";
import { deviceIdsOf } from "../src/model/device-list";
import type { Program } from "../src/model/program";
import type { ShapeDtypeStruct } from "../src/model/shape-dtype-struct";
import { arrayByteLength, elementByteLength } from "../src/rpc/array-bytes";
import { negotiateVersion } from "../src/rpc/negotiate";
import { distinctShards, type ShardIndex } from "../src/shard-indices";
import { SCHEMA_MINOR_VERSION } from "../src/version";

/**
 * Fixed-answer servers (issue 31): real gRPC servers of ColocatedWorkerService that stand in
 * for the workers of a JAX job far larger than this machine holds, so the controller alone can
 * be measured from 16 members to 1,024. Each answers as the worker would from a fixed topology
 * (process p of `processes`, `devices` CPU devices each, numbered as JAX numbers them), loads
 * any program, and answers ExecuteSharded with output specs and shards of the right shapes and
 * byte counts (the program's declared outputs; each byte is the member's process index, so an
 * assembled output shows whose shard landed where). It runs nothing: like the load bench's echo
 * (bench/load_echo.py), it is the cost of the calls around the work. It does check what it is
 * sent: a start first, exactly the input bytes its devices hold, then the end.
 */

/** A member's next calls: answer, fail at once (INTERNAL), or never answer. */
export type FixedMode = "ok" | "error" | "hang";

/** The limits a fixed-answer member states in GetVersion, as a worker's defaults would. */
const LIMITS = { maxConcurrentCalls: 16, maxInflightBytes: 1n << 30n };

/** Output chunks are at most this long, as the worker's are. */
const CHUNK_BYTES = 1 << 20;

/** The device ids of process p: p × 2048 + d, as JAX numbers CPU devices of a job. */
export function fixedDeviceId(process: number, device: number): number {
  return process * 2048 + device;
}

/** The process of a fixed job that holds a device. */
function processOf(id: number): number {
  return Math.floor(id / 2048);
}

/** What one member answers for one program: its input bytes, and its output messages. */
interface Answer {
  inputBytes: number;
  outputs: Uint8Array[];
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

/** A member's answer: its input byte count, and its output messages, encoded once. */
function memberAnswer(loaded: Loaded, p: number): Answer {
  const { program } = loaded;
  const first = deviceIdsOf(program.devices)[0];
  let inputBytes = 0;
  for (const spec of program.inputs.leaves) {
    for (const index of shardsOn(spec, p, first)) inputBytes += shardBytes(spec, index);
  }
  const response = (part: ExecuteShardedResponse["part"]) =>
    ExecuteShardedResponse.encode({ part }).finish();
  const outputs: Uint8Array[] = [
    Buffer.concat([Buffer.of(0x0a), varint(loaded.specs.length), loaded.specs]),
  ];
  const leaves = program.outputs?.leaves ?? [];
  leaves.forEach((spec, leaf) => {
    if (arrayByteLength(spec) === undefined)
      throw new Error("fixed-answer outputs need a fixed-size dtype");
    for (const index of shardsOn(spec, p, first)) {
      const total = shardBytes(spec, index);
      let offset = 0;
      do {
        const length = Math.min(CHUNK_BYTES, total - offset);
        const chunk = {
          leaf,
          index:
            offset === 0
              ? { start: index.start.map(BigInt), stop: index.stop.map(BigInt) }
              : undefined,
          offset: BigInt(offset),
          data: new Uint8Array(length).fill(p & 0xff),
          last: offset + length === total,
        };
        outputs.push(response({ $case: "chunk", value: chunk }));
        offset += length;
      } while (offset < total);
    }
  });
  outputs.push(response({ $case: "end", value: true }));
  return { inputBytes, outputs };
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

const raw = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The service definition with raw answers where the member sends bytes made once. */
const DEFINITION = {
  ...Service,
  executeSharded: { ...Service.executeSharded, responseSerialize: raw },
  getTopology: { ...Service.getTopology, responseSerialize: raw },
};

/** Member `process` of `job`: the service's handlers. */
function handlers(job: FixedJob, process: number) {
  return {
    getVersion(
      call: ServerUnaryCall<GetVersionRequest, GetVersionResponse>,
      done: sendUnaryData<GetVersionResponse>,
    ) {
      const server = { minVersion: 0, maxVersion: SCHEMA_MINOR_VERSION };
      const client = call.request.client ?? server;
      try {
        const version = negotiateVersion(client, server);
        done(null, { server, version, limits: LIMITS });
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
  };
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
      for (const message of answer.outputs) call.write(raw(message));
      call.end();
    }
  });
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
): Promise<FixedServer[]> {
  return Promise.all(
    processes.map(
      (process) =>
        new Promise<FixedServer>((resolve, reject) => {
          const server = new Server({
            "grpc.max_receive_message_length": 256 << 20,
            "grpc.max_send_message_length": 256 << 20,
          });
          server.addService(DEFINITION, handlers(job, process));
          server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, port) => {
            if (error) reject(error);
            else resolve({ process, target: `127.0.0.1:${port}`, server });
          });
        }),
    ),
  );
}

/** Stops servers at once, calls in flight cancelled. */
export function stopFixedServers(servers: readonly FixedServer[]): void {
  for (const s of servers) s.server.forceShutdown();
}
