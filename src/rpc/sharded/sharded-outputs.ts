import { decodeSpecs } from "../../decode";
import { DecodeError } from "../../errors";
import type { Specs } from "../../model/program";
import type { ShapeDtypeStruct } from "../../model/shape-dtype-struct";
import {
  describeIndex,
  distinctShards,
  type ShardIndex,
  ShardIndexError,
} from "../../shard-indices";
import { describeArray, elementByteLength } from "./array-bytes";
import { ShardLayout } from "./shard-layout";

/** Each spec's distinct shards, found once per spec (a ShapeDtypeStruct never changes). */
const SHARDS = new WeakMap<ShapeDtypeStruct, readonly ShardIndex[]>();

/** An array's distinct shards: each slice of the global array once, however many hold it. */
export function shardsOf(spec: ShapeDtypeStruct): readonly ShardIndex[] {
  let shards = SHARDS.get(spec);
  if (shards === undefined) {
    shards =
      spec.sharding === null
        ? [{ start: spec.shape.map(() => 0), stop: [...spec.shape] }]
        : distinctShards(spec.sharding, spec.shape).map((s) => s.index);
    SHARDS.set(spec, shards);
  }
  return shards;
}

/** An output shard a stream expects: where it lies in the global array, and its place in the list. */
export interface ExpectedShard {
  index: ShardIndex;
  layout: ShardLayout;
  position: number;
}

/**
 * An output as one stream receives it: its spec and sizes, and the shards the stream carries,
 * found by where they start (their first element's row-major position, a number: a shard is a
 * tile, and no two tiles of an array start at the same element). Made once per output specs,
 * and shared by every call that receives them.
 */
export interface OutputLeaf {
  spec: ShapeDtypeStruct;
  itemBytes: number;
  /** The whole output's byte length. */
  bytes: number;
  shards: readonly ExpectedShard[];
  byStart: ReadonlyMap<number, ExpectedShard>;
}

/** What the output specs a worker sent mean for one stream. */
export interface StreamOutputs {
  specs: Specs;
  /** The SpecsPayload bytes, copied out of gRPC's message. */
  payload: Uint8Array;
  leaves: readonly OutputLeaf[];
}

/**
 * Which part of each array one sharded stream carries. A single worker's call carries every
 * distinct shard (WHOLE_ARRAYS); a WorkerGroup member's carries the shards its devices hold,
 * found once per program for every member, and the members' outputs land in buffers they
 * share (src/rpc/group/group-call.ts).
 */
export interface ShardScope {
  /** The distinct shards of input `leaf` that this stream sends. */
  inputShards(spec: ShapeDtypeStruct, leaf: number): readonly ShardIndex[];
  /**
   * The output specs the worker sent (its SpecsPayload bytes, a view of gRPC's message) as this
   * stream receives them; throws DecodeError when they cannot be read at `version`.
   */
  outputs(payload: Uint8Array, version: number): StreamOutputs;
  /** Output `leaf`'s buffer of `bytes` bytes: `make()`'s, or one shared with other streams. */
  buffer(leaf: number, bytes: number, make: () => Uint8Array): Uint8Array;
}

/** The scope of a call to one worker: every distinct shard, a buffer of its own per output. */
export const WHOLE_ARRAYS: ShardScope = {
  inputShards: shardsOf,
  outputs: wholeOutputs,
  buffer: (_leaf, _bytes, make) => make(),
};

/** How many distinct output specs WHOLE_ARRAYS keeps read, and the largest it keeps. */
const MAX_REMEMBERED = 64;
const MAX_REMEMBERED_BYTES = 64 << 10;
const REMEMBERED = new Map<string, StreamOutputs>();

/**
 * Output specs read for a whole call, once per distinct bytes and version (as DecodedSpecs
 * does for Execute): a program answers with the same specs every call, and decoding them and
 * finding their shards cost more than the rest of reading a small answer.
 */
function wholeOutputs(payload: Uint8Array, version: number): StreamOutputs {
  const read = () => {
    const copy = payload.slice();
    const specs = decodeSpecs(copy, { maxMinorVersion: version });
    return { specs, payload: copy, leaves: outputLeaves(specs.leaves, shardsOf) };
  };
  if (payload.length > MAX_REMEMBERED_BYTES) return read();
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const key = `${version}:${bytes.toString("latin1")}`;
  let outputs = REMEMBERED.get(key);
  if (outputs === undefined) {
    outputs = read();
    if (REMEMBERED.size >= MAX_REMEMBERED)
      REMEMBERED.delete(REMEMBERED.keys().next().value as string);
    REMEMBERED.set(key, outputs);
  }
  return outputs;
}

/**
 * Each output as a stream receives it, its shards from `shardsOf`; DecodeError for an output
 * with no fixed-size wire form, or whose shards cannot be known.
 */
export function outputLeaves(
  specs: readonly ShapeDtypeStruct[],
  shardsOf: (spec: ShapeDtypeStruct, leaf: number) => readonly ShardIndex[],
): OutputLeaf[] {
  return specs.map((spec, i) => {
    const itemBytes = elementByteLength(spec);
    if (itemBytes === undefined) {
      throw fault(`outputs[${i}]`, `a ${spec.dtypeString} output has no fixed-size wire form`);
    }
    let shards: readonly ShardIndex[];
    try {
      shards = shardsOf(spec, i);
    } catch (error) {
      if (!(error instanceof ShardIndexError)) throw error;
      throw fault(`outputs[${i}]`, `its shards cannot be known: ${error.message}`);
    }
    const bytes = spec.shape.reduce((n, d) => n * d, itemBytes);
    const expected = shards.map((index, position) => ({
      index,
      layout: new ShardLayout(spec.shape, index, itemBytes),
      position,
    }));
    const byStart = new Map(expected.map((e) => [startOf(spec.shape, e.index.start), e]));
    return { spec, itemBytes, bytes, shards: expected, byStart };
  });
}

/** A shard's first element, in row-major order of the array; -1 for a start of another rank. */
function startOf(shape: readonly number[], start: readonly (number | bigint)[]): number {
  if (start.length !== shape.length) return -1;
  let at = 0;
  for (let d = 0; d < shape.length; d++) at = at * shape[d] + Number(start[d]);
  return at;
}

/** Whether a chunk's start (or stop) is a shard's. */
function same(a: readonly number[], b: readonly (number | bigint)[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== Number(b[i])) return false;
  return true;
}

/** A chunk of an output shard: as read from the bytes (sharded-response.ts), or a generated message. */
export interface OutputChunk {
  leaf: number;
  index?: { start: readonly (number | bigint)[]; stop: readonly (number | bigint)[] };
  offset: number | bigint;
  data: Uint8Array;
  last: boolean;
}

/** The shard being received of one output, and how many of its bytes have come. */
interface Open {
  shard: ExpectedShard;
  filled: number;
}

/** One output leaf being assembled: its global buffer and which shards have arrived. */
interface Leaf {
  plan: OutputLeaf;
  data: Uint8Array;
  /** Of each expected shard, whether it has arrived whole. */
  done: boolean[];
  arrived: number;
  open?: Open;
}

/**
 * The worker's response stream, checked as the worker checks the client's: the output specs
 * first, then each output's distinct shards once, in contiguous chunks, first one indexed,
 * last one marked, then `end`. Every chunk lands in its place in one buffer per output.
 */
export class ShardedOutputs {
  private leaves: Leaf[] | undefined;
  private ended = false;
  private specsRead: Specs | undefined;
  outputSpecsPayload: Uint8Array | undefined;
  receivedBytes = 0;

  constructor(
    private readonly version: number,
    private readonly scope: ShardScope = WHOLE_ARRAYS,
    private readonly into?: readonly Uint8Array[],
  ) {}

  /** The output specs (SpecsPayload bytes): decoded, and a buffer made for each output. */
  specs(payload: Uint8Array): void {
    if (this.leaves !== undefined) throw fault("output_specs", "sent twice");
    const { specs, payload: copy, leaves } = this.scope.outputs(payload, this.version);
    if (this.into !== undefined) checkIntoCount(this.into, specs.leaves);
    this.specsRead = specs;
    this.outputSpecsPayload = copy;
    this.leaves = leaves.map((plan, i) => ({
      plan,
      data: this.scope.buffer(i, plan.bytes, () => this.buffer(i, plan.spec, plan.bytes)),
      done: new Array<boolean>(plan.shards.length).fill(false),
      arrived: 0,
    }));
  }

  /** The output specs, once they have come: a copy of their leaves, the caller's to keep. */
  get outputs(): Specs | undefined {
    const specs = this.specsRead;
    return specs && { treedef: specs.treedef, leaves: [...specs.leaves] };
  }

  /** One chunk of an output shard, put in its place. */
  chunk(chunk: OutputChunk): void {
    const leaves = this.leaves;
    if (leaves === undefined) throw fault("output_specs", "a chunk came before the output specs");
    if (this.ended) throw fault("end", "a chunk came after the end");
    const leaf = leaves[chunk.leaf];
    if (leaf === undefined) {
      throw fault(`outputs[${chunk.leaf}]`, `no such output (there are ${leaves.length})`);
    }
    const offset = Number(chunk.offset);
    const open = this.shardOf(chunk.leaf, leaf, chunk, offset);
    const { layout, index } = open.shard;
    if (offset !== open.filled) {
      const how = offset < open.filled ? "overlaps bytes already received" : "leaves a gap";
      const detail = `${at(index, offset)}: the chunk ${how} (${open.filled} so far)`;
      throw fault(`outputs[${chunk.leaf}]`, detail);
    }
    const end = offset + chunk.data.length;
    if (end > layout.byteLength) {
      const detail = `${at(index, offset)}: runs past the shard's end (${layout.byteLength} bytes)`;
      throw fault(`outputs[${chunk.leaf}]`, detail);
    }
    layout.scatter(leaf.data, offset, chunk.data);
    open.filled = end;
    this.receivedBytes += chunk.data.length;
    if (chunk.last) {
      if (end !== layout.byteLength) {
        const detail = `${at(index, offset)}: marked last with ${end} of ${layout.byteLength} bytes`;
        throw fault(`outputs[${chunk.leaf}]`, detail);
      }
      leaf.done[open.shard.position] = true;
      leaf.arrived += 1;
      leaf.open = undefined;
    }
  }

  /** The worker's `end`: every shard of every output must have arrived whole. */
  end(): void {
    if (this.leaves === undefined) throw fault("output_specs", "the stream ended before them");
    this.leaves.forEach((leaf, i) => {
      if (leaf.open) {
        const { shard, filled } = leaf.open;
        const detail = `shard ${describeIndex(shard.index)}: unfinished (${filled} of ${shard.layout.byteLength} bytes)`;
        throw fault(`outputs[${i}]`, detail);
      }
      const shards = leaf.plan.shards;
      if (leaf.arrived === shards.length) return;
      const missing = shards[leaf.done.indexOf(false)];
      const detail = `shard ${describeIndex(missing.index)} never arrived (${leaf.arrived} of ${shards.length})`;
      throw fault(`outputs[${i}]`, detail);
    });
    this.ended = true;
  }

  /** Each output's bytes, once `end` has come. */
  result(): Uint8Array[] {
    if (!this.ended || this.leaves === undefined) {
      throw fault("end", "the worker closed the stream without `end`");
    }
    return this.leaves.map((leaf) => leaf.data);
  }

  /** Output `i`'s buffer: the caller's (its size checked), or a new one. */
  private buffer(i: number, spec: ShapeDtypeStruct, bytes: number): Uint8Array {
    if (this.into === undefined) return allocate(`outputs[${i}]`, spec, bytes);
    checkIntoSize(this.into[i], i, spec, bytes);
    return this.into[i];
  }

  private shardOf(i: number, leaf: Leaf, chunk: OutputChunk, offset: number): Open {
    if (chunk.index === undefined) {
      if (leaf.open === undefined) {
        throw fault(`outputs[${i}]`, `chunk at offset ${offset}: no shard is open`);
      }
      return leaf.open;
    }
    const { start, stop } = chunk.index;
    if (leaf.open) {
      const open = describeIndex(leaf.open.shard.index);
      throw fault(`outputs[${i}]`, `${named(chunk.index)} starts before shard ${open} ended`);
    }
    const { spec, byStart } = leaf.plan;
    const shard = byStart.get(startOf(spec.shape, start));
    if (shard === undefined || !same(shard.index.start, start) || !same(shard.index.stop, stop)) {
      throw fault(
        `outputs[${i}]`,
        `${named(chunk.index)} is not a shard of the ${describeArray(spec)} output`,
      );
    }
    if (leaf.done[shard.position]) throw fault(`outputs[${i}]`, `${named(chunk.index)} sent twice`);
    if (offset !== 0) {
      throw fault(`outputs[${i}]`, `${named(chunk.index)}: first chunk at offset ${offset}`);
    }
    leaf.open = { shard, filled: 0 };
    return leaf.open;
  }
}

/** A chunk's shard, for an error: `shard [0:4,0:2]`. */
function named(index: NonNullable<OutputChunk["index"]>): string {
  return `shard ${describeIndex({ start: index.start.map(Number), stop: index.stop.map(Number) })}`;
}

/** A place in a shard, for an error: `shard [0:4,0:2] at offset 16`. */
function at(index: ShardIndex, offset: number): string {
  return `shard ${describeIndex(index)} at offset ${offset}`;
}

/** One output's buffer; a typed array holds at most 4 GiB on Node 20, so a larger leaf fails here. */
function allocate(path: string, spec: ShapeDtypeStruct, bytes: number): Uint8Array {
  try {
    return new Uint8Array(bytes);
  } catch (error) {
    const why = (error as Error).message;
    throw new RangeError(
      `${path}: a ${describeArray(spec)} output of ${bytes} bytes has no buffer here (${why})`,
    );
  }
}

function fault(path: string, detail: string): DecodeError {
  return new DecodeError(path, "invalid-value", detail);
}

/**
 * Checks `into` against output specs known before the call (a program that declares its
 * outputs): one buffer per output leaf, each of its leaf's byte length (RangeError).
 */
export function checkInto(into: readonly Uint8Array[], specs: readonly ShapeDtypeStruct[]): void {
  checkIntoCount(into, specs);
  specs.forEach((spec, i) => {
    const itemBytes = elementByteLength(spec);
    if (itemBytes !== undefined)
      checkIntoSize(
        into[i],
        i,
        spec,
        spec.shape.reduce((n, d) => n * d, itemBytes),
      );
  });
}

function checkIntoCount(into: readonly Uint8Array[], specs: readonly ShapeDtypeStruct[]): void {
  if (into.length !== specs.length) {
    throw new RangeError(`into: ${into.length} buffers for ${specs.length} output leaves`);
  }
}

function checkIntoSize(buffer: Uint8Array, i: number, spec: ShapeDtypeStruct, bytes: number): void {
  if (buffer.byteLength !== bytes) {
    throw new RangeError(
      `into[${i}]: ${buffer.byteLength} bytes, but the ${describeArray(spec)} output has ${bytes}`,
    );
  }
}
