import { type ClientDuplexStream, type ServiceError, status } from "@grpc/grpc-js";
import {
  type ColocatedWorkerServiceClient,
  ColocatedWorkerServiceService,
} from "../../../gen/ts/colocated/v1/service";
import type { ShapeDtypeStruct } from "../../model/shape-dtype-struct";
import { checkDeadline } from "../client/unary";
import { WorkerError } from "../errors";
import { chunkMessage, END_MESSAGE } from "../messages/sharded-request";
import { readShardedResponse, type ShardedResponse } from "../messages/sharded-response";
import { describeArray, elementByteLength } from "./array-bytes";
import { callMetadata } from "./call-id";
import { ShardLayout } from "./shard-layout";
import { checkInto, ShardedOutputs, type ShardScope, WHOLE_ARRAYS } from "./sharded-outputs";

/** The bytes of one chunk unless asked otherwise; the worker takes at most MAX_CHUNK_BYTES. */
export const DEFAULT_CHUNK_BYTES = 1 << 20;
export const MAX_CHUNK_BYTES = 4 << 20;

/** Requests go as the bytes sharded-request.ts writes; responses are read from their bytes. */
const EXECUTE_SHARDED = ColocatedWorkerServiceService.executeSharded.path;
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** Bytes moved so far in one sharded call. */
export interface ShardedProgress {
  sentBytes: number;
  receivedBytes: number;
}

/** Options of one ExecuteSharded call. */
export interface ShardedOptions {
  deadlineMs?: number;
  /** The most data bytes in one chunk (1 MiB by default, at most 4 MiB). */
  chunkBytes?: number;
  /** Called after each chunk sent or received. */
  onProgress?: (progress: ShardedProgress) => void;
  /** Cancels the call (it fails with CANCELLED, and the worker stops its work). */
  signal?: AbortSignal;
  /** Which shards the call carries: every distinct shard unless a WorkerGroup says otherwise. */
  scope?: ShardScope;
  /** Names the call on every member of a JAX job (src/rpc/sharded/call-id.ts); a WorkerGroup sets it. */
  callId?: string;
  /**
   * Buffers to write the outputs into, one per output leaf of its exact byte length, in place
   * of new ones: a caller that calls the same program again and again reuses them, and pays
   * for fresh memory once. Any ArrayBufferView (a typed array, DataView or Buffer) goes, and
   * gets the bytes it views; the result's `data[i]` is `into[i]` itself when that is a
   * Uint8Array, else a Uint8Array on exactly its bytes. A call that fails may have written
   * part of them.
   */
  into?: readonly ArrayBufferView[];
}

/** What a sharded call needs of the client: its stub, where it goes, how long it may take. */
export interface ShardedTarget {
  stub: ColocatedWorkerServiceClient;
  target: string;
  deadlineMs: number;
}

/**
 * What the program returned: output specs, and one global row-major buffer per output (a
 * typed array, so at most 4 GiB per output leaf on Node 20; the stream itself has no bound).
 */
export interface ShardedResult {
  outputs: ShardedOutputs["outputs"] & {};
  data: Uint8Array[];
  outputSpecsPayload: Uint8Array;
}

/** A call's inputs and options once checked (checkShardedCall). */
export interface CheckedCall {
  chunkBytes: number;
  /** Each input's bytes, a view of the caller's array. */
  globals: Uint8Array[];
  into?: Uint8Array[];
}

/**
 * Runs a program on the worker with ExecuteSharded: `start` (the ExecuteStart message's bytes,
 * sharded-request.ts, at `version`), then each input's distinct shards (a replicated shard
 * once) in chunks read from the caller's global arrays (a chunk's bytes are copied once, from
 * the global array into its message), then `end`; the outputs come back the same way into one
 * buffer each. Throws WorkerError when the call fails, DecodeError when the worker's stream
 * is not valid.
 */
export function callSharded(
  call: ShardedTarget,
  version: number,
  start: Uint8Array,
  inputSpecs: readonly ShapeDtypeStruct[],
  checked: CheckedCall,
  options: ShardedOptions = {},
): Promise<ShardedResult> {
  const deadlineMs = options.deadlineMs ?? call.deadlineMs;
  checkDeadline(deadlineMs);
  const { chunkBytes, globals, into } = checked;
  const scope = options.scope ?? WHOLE_ARRAYS;
  const outputs = new ShardedOutputs(version, scope, into);
  const progress: ShardedProgress = { sentBytes: 0, receivedBytes: 0 };
  const stream = call.stub.makeBidiStreamRequest(
    EXECUTE_SHARDED,
    asBuffer,
    readShardedResponse,
    callMetadata(options.callId),
    { deadline: Date.now() + deadlineMs },
  );

  return new Promise<ShardedResult>((resolve, reject) => {
    let settled = false;
    const cancel = () => stream.cancel();
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener("abort", cancel);
      stream.cancel();
      reject(error);
    };
    options.signal?.throwIfAborted();
    options.signal?.addEventListener("abort", cancel, { once: true });
    stream.on("data", (response: ShardedResponse) => {
      try {
        receive(outputs, response);
        progress.receivedBytes = outputs.receivedBytes;
        options.onProgress?.(progress);
      } catch (error) {
        fail(error);
      }
    });
    stream.on("error", (error: ServiceError) => {
      fail(workerError(error, call.target, deadlineMs));
    });
    stream.on("end", () => {
      try {
        const data = outputs.result();
        settled = true;
        options.signal?.removeEventListener("abort", cancel);
        resolve({
          outputs: outputs.outputs as ShardedResult["outputs"],
          data,
          outputSpecsPayload: outputs.outputSpecsPayload as Uint8Array,
        });
      } catch (error) {
        fail(error);
      }
    });
    const send = async () => {
      await write(stream, start);
      for (const { message, dataBytes } of inputChunks(inputSpecs, globals, chunkBytes, scope)) {
        if (settled) return;
        await write(stream, message);
        progress.sentBytes += dataBytes;
        options.onProgress?.(progress);
      }
      await write(stream, END_MESSAGE);
      stream.end();
    };
    send().catch(fail);
  });
}

/**
 * Checks a call before anything is sent (RangeError, TypeError): the chunk size, each input's
 * byte length against its spec, and that `into` holds only ArrayBufferViews, one per output of
 * its byte length when the program declares its outputs (else checked against the output specs
 * when the worker sends them, before any output byte is written). Returns the chunk size, and
 * each input and `into` buffer as a Uint8Array.
 */
export function checkShardedCall(
  specs: readonly ShapeDtypeStruct[],
  inputs: readonly ArrayBufferView[],
  options: ShardedOptions,
  outputs?: readonly ShapeDtypeStruct[],
): CheckedCall {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (!(Number.isInteger(chunkBytes) && chunkBytes > 0 && chunkBytes <= MAX_CHUNK_BYTES)) {
    throw new RangeError(`chunkBytes is an integer in [1, ${MAX_CHUNK_BYTES}], not ${chunkBytes}`);
  }
  const into: unknown = options.into;
  if (into !== undefined && !Array.isArray(into)) {
    throw new TypeError(`into: ${kind(into)}, not an array of one ArrayBufferView per output leaf`);
  }
  const views = into && Array.from(into, intoView); // holes too: into[i] undefined
  if (views !== undefined && outputs !== undefined) checkInto(views, outputs);
  return { chunkBytes, globals: inputViews(specs, inputs), into: views };
}

/** `into[i]` as a Uint8Array on exactly its bytes: itself when it is one (a Buffer too). */
function intoView(buffer: unknown, i: number): Uint8Array {
  if (buffer instanceof Uint8Array) return buffer;
  if (!ArrayBuffer.isView(buffer)) {
    throw new TypeError(
      `into[${i}]: ${kind(buffer)}, not an ArrayBufferView (a typed array, DataView or Buffer)`,
    );
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** What a value is, for an error: null, a number, an array, a Float32Array, an ArrayBuffer. */
function kind(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const name = Array.isArray(value)
    ? "array"
    : typeof value === "object"
      ? (value.constructor?.name ?? "object")
      : typeof value;
  return `${/^[aeiou]/i.test(name) ? "an" : "a"} ${name}`;
}

/** Each input's bytes as a Uint8Array view (not a copy), once its length is checked. */
function inputViews(
  specs: readonly ShapeDtypeStruct[],
  inputs: readonly ArrayBufferView[],
): Uint8Array[] {
  if (inputs.length !== specs.length) {
    throw new RangeError(
      `inputs: ${inputs.length} arrays for a program of ${specs.length} input leaves`,
    );
  }
  return inputs.map((input, i) => {
    const item = elementByteLength(specs[i]);
    if (item === undefined) {
      throw new RangeError(
        `inputs[${i}]: dtype ${specs[i].dtypeString} has no fixed-size wire form`,
      );
    }
    const want = specs[i].shape.reduce((n, d) => n * d, item);
    if (input.byteLength !== want) {
      const spec = describeArray(specs[i]);
      throw new RangeError(
        `inputs[${i}]: ${input.byteLength} bytes, but a ${spec} input needs ${want}`,
      );
    }
    return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  });
}

/** The chunk messages of every input's distinct shards, made one at a time as they are sent. */
function* inputChunks(
  specs: readonly ShapeDtypeStruct[],
  globals: readonly Uint8Array[],
  chunkBytes: number,
  scope: ShardScope,
): Generator<{ message: Uint8Array; dataBytes: number }> {
  for (let leaf = 0; leaf < specs.length; leaf++) {
    const spec = specs[leaf];
    const item = elementByteLength(spec) as number;
    for (const index of scope.inputShards(spec, leaf)) {
      const layout = new ShardLayout(spec.shape, index, item);
      const total = layout.byteLength;
      let offset = 0;
      do {
        const length = Math.min(chunkBytes, total - offset);
        const named = offset === 0 ? index : undefined;
        const message = chunkMessage(leaf, named, layout, globals[leaf], offset, length);
        yield { message, dataBytes: length };
        offset += length;
      } while (offset < total);
    }
  }
}

function receive(outputs: ShardedOutputs, part: ShardedResponse): void {
  if (part?.$case === "outputSpecs") outputs.specs(part.value);
  else if (part?.$case === "chunk") outputs.chunk(part.value);
  else if (part?.$case === "end") outputs.end();
}

/** Writes one message, waiting while the channel's buffer is full. */
function write(
  stream: ClientDuplexStream<Uint8Array, ShardedResponse>,
  message: Uint8Array,
): Promise<void> | undefined {
  if (stream.write(message)) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      stream.off("error", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
    stream.on("error", done);
  });
}

function workerError(error: ServiceError, target: string, deadlineMs: number): WorkerError {
  const details = error.details || error.message;
  const hint =
    error.code === status.UNAVAILABLE
      ? " (the worker is unreachable, or died during the call)"
      : error.code === status.DEADLINE_EXCEEDED
        ? ` (no answer within ${deadlineMs} ms)`
        : "";
  const message = `ExecuteSharded on ${target} failed: ${status[error.code]}: ${details}${hint}`;
  return new WorkerError(error.code, details, message);
}
