import { status } from "@grpc/grpc-js";
import {
  ColocatedWorkerServiceClient,
  ColocatedWorkerServiceService,
  ExecuteRequest,
  LoadProgramResponse,
  type WorkerRuntime,
} from "../../../gen/ts/colocated/v1/service";
import { DecodeError } from "../../errors";
import type { Program, Specs } from "../../model/program";
import { VersionMismatchError, WorkerError } from "../errors";
import { readExecuteResponse } from "../messages/execute-response";
import { startMessage } from "../messages/sharded-request";
import { checkOutputData } from "../sharded/array-bytes";
import { shardedBytes } from "../sharded/sharded-bytes";
import {
  callSharded,
  checkShardedCall,
  type ShardedOptions,
  type ShardedResult,
  type ShardedTarget,
} from "../sharded/sharded-call";
import { RelayStream } from "../transports/relay";
import { Session } from "../transports/session";
import {
  CallQueue,
  checkQueueOptions,
  type QueueOptions,
  type WorkerLimits,
  workerLimits,
} from "./call-queue";
import { type ChannelOptions, channelCredentials, channelOptions } from "./channel";
import { DecodedSpecs } from "./decoded-specs";
import {
  checkRange,
  DEFAULT_VERSION_RANGE,
  negotiateVersion,
  type VersionRange,
} from "./negotiate";
import { ProgramHandles, type SentProgram, sentProgram } from "./program-handles";
import { type Topology, topologyOf } from "./topology";
import { type CallTarget, callUnary, checkDeadline, type UnaryMethod } from "./unary";

/** Every call's deadline unless one is given. */
export const DEFAULT_DEADLINE_MS = 30_000;

/** Programs and outputs are small, but larger than gRPC's 4 MiB default; the worker agrees. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/**
 * Execute goes as bytes both ways: the response is read in place (execute-response.ts).
 * LoadProgram's request is bytes encoded once per program for every client
 * (program-handles.ts), GetTopology's answer bytes a WorkerGroup compares (group-topology.ts).
 */
const EXECUTE = ColocatedWorkerServiceService.execute.path;
const LOAD_PROGRAM = ColocatedWorkerServiceService.loadProgram.path;
const GET_TOPOLOGY = ColocatedWorkerServiceService.getTopology.path;
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const asIs = (b: Buffer) => b;
const EMPTY = new Uint8Array(0);

/**
 * How to reach a worker (TLS, compression: ChannelOptions), which versions to offer it, and how
 * many calls may wait for its limits (QueueOptions).
 */
export interface ConnectOptions extends Partial<VersionRange>, ChannelOptions, QueueOptions {
  /** Deadline of the version handshake, and the default of every later call. */
  deadlineMs?: number;
}

/** Options of one Execute call. */
export interface ExecuteOptions {
  /** The deadline of each call it makes (LoadProgram when needed, then Execute). */
  deadlineMs?: number;
  /** Aborting it cancels the call; the worker stops its work at the next step. */
  signal?: AbortSignal;
}

/** What a program returned. */
export interface ExecuteResult {
  /** The output specs, lifted: shardings on one mesh share one Mesh instance. */
  outputs: Specs;
  /** Each output leaf's raw little-endian bytes, in leaf order, each in its own buffer. */
  data: Uint8Array[];
  /** The SpecsPayload bytes of the outputs, as the worker sent them. */
  outputSpecsPayload: Uint8Array;
}

/** A connection to a colocated-Python worker, at the version both sides agreed on. */
export class WorkerClient {
  private readonly handles: ProgramHandles;
  private readonly outputSpecs: DecodedSpecs;
  private readonly executeBytes: UnaryMethod<Uint8Array, Buffer>;
  private readonly loadBytes: UnaryMethod<Uint8Array, LoadProgramResponse>;
  private readonly topologyBytes: UnaryMethod<Uint8Array, Buffer>;

  private constructor(
    private readonly stub: ColocatedWorkerServiceClient,
    /** host:port of the worker. */
    readonly target: string,
    /** The negotiated minor version of colocated.v1, sent with every call. */
    readonly version: number,
    /** The worker's supported range, as it reported it. */
    readonly serverRange: VersionRange,
    private readonly deadlineMs: number,
    /** Keeps the calls within the worker's limits (src/rpc/client/call-queue.ts). */
    private readonly queue: CallQueue,
    /** Whether the worker serves Session and Relay, as its GetVersion answer said. */
    private readonly serves: { sessions: boolean; relays: boolean },
    /**
     * What the worker runs (colocated-wire, Python, JAX, jaxlib, NumPy and cloudpickle
     * versions, platform, device kind), as its GetVersion answer said; undefined from a worker
     * too old to say.
     */
    readonly runtime: WorkerRuntime | undefined,
  ) {
    this.handles = new ProgramHandles((program) => this.load(program));
    this.outputSpecs = new DecodedSpecs(version);
    const bytesMethod =
      <Res>(path: string, read: (b: Buffer) => Res): UnaryMethod<Uint8Array, Res> =>
      (request, metadata, options, callback) =>
        stub.makeUnaryRequest(path, asBuffer, read, request, metadata, options, (error, res) =>
          callback(error, res as Res),
        );
    this.executeBytes = bytesMethod(EXECUTE, asIs);
    this.loadBytes = bytesMethod(LOAD_PROGRAM, (b) => LoadProgramResponse.decode(b));
    this.topologyBytes = bytesMethod(GET_TOPOLOGY, asIs);
  }

  /** Connects and negotiates a version; throws VersionMismatchError when there is none. */
  static async connect(target: string, options: ConnectOptions = {}): Promise<WorkerClient> {
    const client: VersionRange = {
      minVersion: options.minVersion ?? DEFAULT_VERSION_RANGE.minVersion,
      maxVersion: options.maxVersion ?? DEFAULT_VERSION_RANGE.maxVersion,
    };
    const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    checkRange(client, "client");
    checkDeadline(deadlineMs);
    const maxQueued = checkQueueOptions(options);
    const stub = new ColocatedWorkerServiceClient(
      target,
      channelCredentials(options),
      channelOptions(options, {
        "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
        "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
      }),
    );
    try {
      const response = await callUnary(
        stub.getVersion.bind(stub),
        { client },
        { target, method: "GetVersion", deadlineMs },
      );
      const server = {
        minVersion: response.server?.minVersion ?? 0,
        maxVersion: response.server?.maxVersion ?? 0,
      };
      const version = negotiateVersion(client, server);
      if (response.version !== version) {
        const detail = `the worker chose version ${response.version}, the rule gives ${version}`;
        throw new WorkerError(status.INTERNAL, detail); // the worker broke the protocol
      }
      const queue = new CallQueue(workerLimits(response.limits), maxQueued);
      const serves = { sessions: response.sessions, relays: response.relays };
      const { runtime } = response;
      return new WorkerClient(stub, target, version, server, deadlineMs, queue, serves, runtime);
    } catch (error) {
      stub.close();
      // The worker refuses GetVersion with FAILED_PRECONDITION when the ranges do not meet.
      if (error instanceof WorkerError && error.code === status.FAILED_PRECONDITION) {
        throw new VersionMismatchError(error.details);
      }
      throw error;
    }
  }

  /**
   * Runs a program (a model, or ProgramPayload bytes sent as they are) on raw little-endian
   * input data, one array per input leaf. The program is loaded on the worker once and then
   * called by handle; when the worker no longer holds it (evicted, or restarted), it is loaded
   * again and the call made once more. Throws WorkerError when the call fails and DecodeError
   * when the worker's answer is not valid at the negotiated version.
   */
  async execute(
    program: Program | Uint8Array,
    inputs: readonly Uint8Array[],
    options: ExecuteOptions = {},
  ): Promise<ExecuteResult> {
    const sent = sentProgram(program, this.version);
    const call = async (handle: Promise<Uint8Array>) => {
      const request = ExecuteRequest.encode({
        version: this.version,
        handle: { digest: await handle },
        inputs: inputs.map((data) => ({ data })),
      }).finish();
      const target = this.callTarget("Execute", options);
      return this.queued(request.byteLength, target, this.executeBytes, request);
    };
    const handle = this.handles.handle(sent);
    try {
      return this.readResponse(await call(handle));
    } catch (error) {
      if (!(error instanceof WorkerError && error.code === status.NOT_FOUND)) throw error;
      this.handles.forget(sent, handle);
      return this.readResponse(await call(this.handles.handle(sent)));
    }
  }

  /** Loads a program on the worker (once per program) and returns its handle, a SHA-256 digest. */
  loadProgram(program: Program | Uint8Array): Promise<Uint8Array> {
    return this.handles.handle(sentProgram(program, this.version));
  }

  /** The handle of a program as sentProgram gave it (a WorkerGroup lowers it once for all). */
  loadSent(sent: SentProgram): Promise<Uint8Array> {
    return this.handles.handle(sent);
  }

  /**
   * Loads `sent` again, as after NOT_FOUND: forgets the handle this client had for it (the
   * worker no longer holds it) and gives the new one.
   */
  reloadSent(sent: SentProgram): Promise<Uint8Array> {
    return this.handles.reload(sent);
  }

  /** Whether the worker serves Session, as its GetVersion answer said. */
  get servesSessions(): boolean {
    return this.serves.sessions;
  }

  /** Whether the worker serves Relay, as its GetVersion answer said. */
  get servesRelays(): boolean {
    return this.serves.relays;
  }

  /** A Session on this client's channel (a worker that serves them: `servesSessions`). */
  openSession(): Session {
    return new Session(this.stub, this.target);
  }

  /** A Relay on this client's channel carrying `children`'s sessions (`servesRelays`). */
  openRelay(children: readonly string[]): RelayStream {
    return new RelayStream(this.stub, this.target, children);
  }

  /**
   * The worker's limits, as its GetVersion answer stated them: this client keeps its calls
   * within them and queues the rest. Undefined from a worker too old to state them, which
   * leaves the calls unlimited.
   */
  get limits(): WorkerLimits | undefined {
    return this.queue.limits;
  }

  /** How many calls wait in this client's queue for the worker's limits now. */
  get queuedCalls(): number {
    return this.queue.queued;
  }

  /** How many times this client sent a program with LoadProgram (first uses, and reloads). */
  get programLoads(): number {
    return this.handles.loads;
  }

  /**
   * Runs a program on inputs of any size with ExecuteSharded: each input leaf's global array
   * (raw little-endian, row-major; any typed array) goes shard by shard in bounded chunks,
   * and each output comes back into one buffer (src/rpc/sharded/sharded-call.ts). The program is
   * named by handle, and loaded again once if the worker no longer holds it, as in execute.
   */
  async executeSharded(
    program: Program,
    inputs: readonly ArrayBufferView[],
    options: ShardedOptions = {},
  ): Promise<ShardedResult> {
    // Before the program is loaded.
    const checked = checkShardedCall(
      program.inputs.leaves,
      inputs,
      options,
      program.outputs?.leaves,
    );
    const bytes = shardedBytes(program.inputs.leaves, options.scope?.inputShards);
    return this.withHandle(
      sentProgram(program, this.version),
      bytes,
      options,
      (target, digest, deadlineMs) => {
        const start = startMessage({ version: this.version, handle: { digest } });
        const call = { ...options, deadlineMs };
        return callSharded(target, this.version, start, program.inputs.leaves, checked, call);
      },
    );
  }

  /**
   * Runs a sharded call (`call`) with the worker's handle of `sent`, loaded first unless this
   * client has loaded it, within this client's queue for the worker's limits, holding `bytes`;
   * `call` gets the milliseconds left of its deadline. When the worker no longer holds the
   * program (NOT_FOUND: evicted, or restarted), it is loaded again and the call made once
   * more. executeSharded and a WorkerGroup's member calls both go through here.
   */
  async withHandle<T>(
    sent: SentProgram,
    bytes: number,
    options: ExecuteOptions,
    call: (target: ShardedTarget, digest: Uint8Array, deadlineMs: number) => Promise<T>,
  ): Promise<T> {
    const target = { stub: this.stub, target: this.target, deadlineMs: this.deadlineMs };
    const run = async (handle: Promise<Uint8Array>) => {
      const digest = await handle;
      return this.queue.run(bytes, this.callTarget("ExecuteSharded", options), (deadlineMs) =>
        call(target, digest, deadlineMs),
      );
    };
    const handle = this.handles.handle(sent);
    try {
      return await run(handle);
    } catch (error) {
      if (!(error instanceof WorkerError && error.code === status.NOT_FOUND)) throw error;
      this.handles.forget(sent, handle);
      return run(this.handles.handle(sent));
    }
  }

  /** The worker's JAX job (GetTopology): its process count, its own index, every global device. */
  async getTopology(options: ExecuteOptions = {}): Promise<Topology> {
    const response = await callUnary(
      this.stub.getTopology.bind(this.stub),
      {},
      {
        target: this.target,
        method: "GetTopology",
        deadlineMs: options.deadlineMs ?? this.deadlineMs,
        signal: options.signal,
      },
    );
    return topologyOf(response);
  }

  /** GetTopology's answer as the worker wrote it: a WorkerGroup compares its members' by bytes. */
  getTopologyBytes(options: ExecuteOptions = {}): Promise<Uint8Array> {
    return callUnary(this.topologyBytes, EMPTY, {
      target: this.target,
      method: "GetTopology",
      deadlineMs: options.deadlineMs ?? this.deadlineMs,
      signal: options.signal,
    });
  }

  /** Closes the channel once calls in flight end (grpc-js lets them finish); cancel one with `signal`. */
  close(): void {
    this.stub.close();
  }

  private async load(program: SentProgram): Promise<Uint8Array> {
    const response = await this.queued(
      program.request.byteLength, // as the worker counts it
      this.callTarget("LoadProgram", {}),
      this.loadBytes,
      program.request,
    );
    if (!response.handle?.digest.length) {
      throw new WorkerError(status.INTERNAL, "the worker answered LoadProgram with no handle");
    }
    return response.handle.digest;
  }

  /** A call of `method` to this worker, by the options' deadline and signal. */
  private callTarget(method: string, options: ExecuteOptions): CallTarget {
    const deadlineMs = options.deadlineMs ?? this.deadlineMs;
    return { target: this.target, method, deadlineMs, signal: options.signal };
  }

  /** A unary call of `bytes` of request, once it fits in the worker's limits. */
  private queued<Req, Res>(
    bytes: number,
    call: CallTarget,
    method: UnaryMethod<Req, Res>,
    request: Req,
  ): Promise<Res> {
    return this.queue.run(bytes, call, (leftMs) =>
      callUnary(method, request, { ...call, deadline: Date.now() + leftMs }),
    );
  }

  private readResponse(bytes: Uint8Array): ExecuteResult {
    const response = readExecuteResponse(bytes);
    if (!response.outputSpecs) {
      throw new DecodeError("output_specs", "missing", "the worker sent no output specs");
    }
    const outputs = this.outputSpecs.decode(response.outputSpecs);
    const data = checkOutputData(outputs.leaves, response.outputs);
    // A copy, as each output's: the response's buffer is gRPC's.
    return { outputs, data, outputSpecsPayload: response.outputSpecs.slice() };
  }
}
