import { status } from "@grpc/grpc-js";
import { ProgramPayload, SpecsPayload } from "../../gen/ts/colocated/v1/payload";
import {
  ColocatedWorkerServiceClient,
  type ExecuteResponse,
} from "../../gen/ts/colocated/v1/service";
import { decodeSpecs } from "../decode";
import { lowerProgramPayload } from "../encode";
import { DecodeError } from "../errors";
import type { Program, Specs } from "../model/program";
import { checkOutputData } from "./array-bytes";
import { type ChannelOptions, channelCredentials, channelOptions } from "./channel";
import { VersionMismatchError, WorkerError } from "./errors";
import {
  checkRange,
  DEFAULT_VERSION_RANGE,
  negotiateVersion,
  type VersionRange,
} from "./negotiate";
import { callUnary, checkDeadline } from "./unary";

/** Every call's deadline unless one is given. */
export const DEFAULT_DEADLINE_MS = 30_000;

/** Programs and outputs are small, but larger than gRPC's 4 MiB default; the worker agrees. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** How to reach a worker (TLS, compression: ChannelOptions) and which versions to offer it. */
export interface ConnectOptions extends Partial<VersionRange>, ChannelOptions {
  /** Deadline of the version handshake, and the default of every later call. */
  deadlineMs?: number;
}

/** Options of one Execute call. */
export interface ExecuteOptions {
  deadlineMs?: number;
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
  private constructor(
    private readonly stub: ColocatedWorkerServiceClient,
    /** host:port of the worker. */
    readonly target: string,
    /** The negotiated minor version of colocated.v1, sent with every call. */
    readonly version: number,
    /** The worker's supported range, as it reported it. */
    readonly serverRange: VersionRange,
    private readonly deadlineMs: number,
  ) {}

  /** Connects and negotiates a version; throws VersionMismatchError when there is none. */
  static async connect(target: string, options: ConnectOptions = {}): Promise<WorkerClient> {
    const client: VersionRange = {
      minVersion: options.minVersion ?? DEFAULT_VERSION_RANGE.minVersion,
      maxVersion: options.maxVersion ?? DEFAULT_VERSION_RANGE.maxVersion,
    };
    const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    checkRange(client, "client");
    checkDeadline(deadlineMs);
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
      return new WorkerClient(stub, target, version, server, deadlineMs);
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
   * input data, one array per input leaf. Throws WorkerError when the call fails and
   * DecodeError when the worker's answer is not valid at the negotiated version.
   */
  async execute(
    program: Program | Uint8Array,
    inputs: readonly Uint8Array[],
    options: ExecuteOptions = {},
  ): Promise<ExecuteResult> {
    const request = {
      version: this.version,
      program:
        program instanceof Uint8Array
          ? parseProgram(program)
          : lowerProgramPayload(program, { targetMinorVersion: this.version }),
      inputs: inputs.map((data) => ({ data })),
    };
    const response = await callUnary(this.stub.execute.bind(this.stub), request, {
      target: this.target,
      method: "Execute",
      deadlineMs: options.deadlineMs ?? this.deadlineMs,
    });
    return this.readResponse(response);
  }

  /** Closes the channel; calls in flight fail with CANCELLED. */
  close(): void {
    this.stub.close();
  }

  private readResponse(response: ExecuteResponse): ExecuteResult {
    if (!response.outputSpecs) {
      throw new DecodeError("output_specs", "missing", "the worker sent no output specs");
    }
    const outputSpecsPayload = SpecsPayload.encode(response.outputSpecs).finish();
    const outputs = decodeSpecs(outputSpecsPayload, { maxMinorVersion: this.version });
    const data = checkOutputData(
      outputs.leaves,
      response.outputs.map((a) => a.data),
    );
    return { outputs, data, outputSpecsPayload };
  }
}

/** The message of program bytes; the worker, not the client, judges what is in it. */
function parseProgram(bytes: Uint8Array): ProgramPayload {
  try {
    return ProgramPayload.decode(bytes);
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
}
