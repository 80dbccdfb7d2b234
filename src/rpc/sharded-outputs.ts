import { SpecsPayload } from "../../gen/ts/colocated/v1/payload";
import type { ShardChunk } from "../../gen/ts/colocated/v1/service";
import { decodeSpecs } from "../decode";
import { DecodeError } from "../errors";
import type { Specs } from "../model/program";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { describeIndex, distinctShards, type ShardIndex, ShardIndexError } from "../shard-indices";
import { describeArray, elementByteLength } from "./array-bytes";
import { ShardLayout } from "./shard-layout";

/** An array's distinct shards: each slice of the global array once, however many hold it. */
export function shardsOf(spec: ShapeDtypeStruct): ShardIndex[] {
  if (spec.sharding === null) return [{ start: spec.shape.map(() => 0), stop: [...spec.shape] }];
  return distinctShards(spec.sharding, spec.shape).map((s) => s.index);
}

/**
 * Which part of each array one sharded stream carries. A single worker's call carries every
 * distinct shard (WHOLE_ARRAYS); a WorkerGroup member's carries the shards its devices hold,
 * and the members' outputs land in buffers they share (src/rpc/group-shards.ts).
 */
export interface ShardScope {
  /** The distinct shards of an array that this stream sends or receives. */
  shardsOf(spec: ShapeDtypeStruct): ShardIndex[];
  /** Output `leaf`'s buffer of `bytes` bytes: `make()`'s, or one shared with other streams. */
  buffer(leaf: number, bytes: number, make: () => Uint8Array): Uint8Array;
}

/** The scope of a call to one worker: every distinct shard, a buffer of its own per output. */
export const WHOLE_ARRAYS: ShardScope = { shardsOf, buffer: (_leaf, _bytes, make) => make() };

/** `start|stop`: a shard's key among its array's shards. */
export function indexKey(index: ShardIndex): string {
  return `${index.start}|${index.stop}`;
}

/** One output leaf being assembled: its global buffer and which shards have arrived. */
interface Leaf {
  spec: ShapeDtypeStruct;
  data: Uint8Array;
  itemBytes: number;
  expected: Map<string, ShardIndex>;
  done: Set<string>;
  open?: { index: ShardIndex; layout: ShardLayout; filled: number };
}

/**
 * The worker's response stream, checked as the worker checks the client's: the output specs
 * first, then each output's distinct shards once, in contiguous chunks, first one indexed,
 * last one marked, then `end`. Every chunk lands in its place in one buffer per output.
 */
export class ShardedOutputs {
  private leaves: Leaf[] | undefined;
  private ended = false;
  outputs: Specs | undefined;
  outputSpecsPayload: Uint8Array | undefined;
  receivedBytes = 0;

  constructor(
    private readonly version: number,
    private readonly scope: ShardScope = WHOLE_ARRAYS,
    private readonly into?: readonly Uint8Array[],
  ) {}

  /** The output specs: decoded, and a buffer made for each output. */
  specs(message: SpecsPayload): void {
    if (this.leaves !== undefined) throw fault("output_specs", "sent twice");
    this.outputSpecsPayload = SpecsPayload.encode(message).finish();
    this.outputs = decodeSpecs(this.outputSpecsPayload, { maxMinorVersion: this.version });
    if (this.into !== undefined) checkIntoCount(this.into, this.outputs.leaves);
    this.leaves = this.outputs.leaves.map((spec, i) => {
      const itemBytes = elementByteLength(spec);
      if (itemBytes === undefined) {
        throw fault(`outputs[${i}]`, `a ${spec.dtypeString} output has no fixed-size wire form`);
      }
      let shards: ShardIndex[];
      try {
        shards = this.scope.shardsOf(spec);
      } catch (error) {
        if (!(error instanceof ShardIndexError)) throw error;
        throw fault(`outputs[${i}]`, `its shards cannot be known: ${error.message}`);
      }
      const bytes = spec.shape.reduce((n, d) => n * d, itemBytes);
      const data = this.scope.buffer(i, bytes, () => this.buffer(i, spec, bytes));
      const expected = new Map(shards.map((index) => [indexKey(index), index]));
      return { spec, data, itemBytes, expected, done: new Set<string>() };
    });
  }

  /** One chunk of an output shard, put in its place. */
  chunk(chunk: ShardChunk): void {
    const leaves = this.leaves;
    if (leaves === undefined) throw fault("output_specs", "a chunk came before the output specs");
    if (this.ended) throw fault("end", "a chunk came after the end");
    const leaf = leaves[chunk.leaf];
    if (leaf === undefined) {
      throw fault(`outputs[${chunk.leaf}]`, `no such output (there are ${leaves.length})`);
    }
    const offset = Number(chunk.offset);
    const shard = this.shardOf(chunk.leaf, leaf, chunk, offset);
    const where = `shard ${describeIndex(shard.index)} at offset ${offset}`;
    if (offset !== shard.filled) {
      const how = offset < shard.filled ? "overlaps bytes already received" : "leaves a gap";
      throw fault(`outputs[${chunk.leaf}]`, `${where}: the chunk ${how} (${shard.filled} so far)`);
    }
    const end = offset + chunk.data.length;
    if (end > shard.layout.byteLength) {
      const detail = `${where}: runs past the shard's end (${shard.layout.byteLength} bytes)`;
      throw fault(`outputs[${chunk.leaf}]`, detail);
    }
    shard.layout.scatter(leaf.data, offset, chunk.data);
    shard.filled = end;
    this.receivedBytes += chunk.data.length;
    if (chunk.last) {
      if (end !== shard.layout.byteLength) {
        const detail = `${where}: marked last with ${end} of ${shard.layout.byteLength} bytes`;
        throw fault(`outputs[${chunk.leaf}]`, detail);
      }
      leaf.done.add(indexKey(shard.index));
      leaf.open = undefined;
    }
  }

  /** The worker's `end`: every shard of every output must have arrived whole. */
  end(): void {
    if (this.leaves === undefined) throw fault("output_specs", "the stream ended before them");
    this.leaves.forEach((leaf, i) => {
      if (leaf.open) {
        const { index, filled, layout } = leaf.open;
        const detail = `shard ${describeIndex(index)}: unfinished (${filled} of ${layout.byteLength} bytes)`;
        throw fault(`outputs[${i}]`, detail);
      }
      for (const [key, index] of leaf.expected) {
        if (!leaf.done.has(key)) {
          const detail = `shard ${describeIndex(index)} never arrived (${leaf.done.size} of ${leaf.expected.size})`;
          throw fault(`outputs[${i}]`, detail);
        }
      }
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

  private shardOf(i: number, leaf: Leaf, chunk: ShardChunk, offset: number) {
    if (chunk.index === undefined) {
      if (leaf.open === undefined) {
        throw fault(`outputs[${i}]`, `chunk at offset ${offset}: no shard is open`);
      }
      return leaf.open;
    }
    const index = { start: chunk.index.start.map(Number), stop: chunk.index.stop.map(Number) };
    const named = `shard ${describeIndex(index)}`;
    if (leaf.open) {
      throw fault(
        `outputs[${i}]`,
        `${named} starts before shard ${describeIndex(leaf.open.index)} ended`,
      );
    }
    const key = indexKey(index);
    if (!leaf.expected.has(key)) {
      throw fault(
        `outputs[${i}]`,
        `${named} is not a shard of the ${describeArray(leaf.spec)} output`,
      );
    }
    if (leaf.done.has(key)) throw fault(`outputs[${i}]`, `${named} sent twice`);
    if (offset !== 0) throw fault(`outputs[${i}]`, `${named}: first chunk at offset ${offset}`);
    leaf.open = {
      index,
      layout: new ShardLayout(leaf.spec.shape, index, leaf.itemBytes),
      filled: 0,
    };
    return leaf.open;
  }
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
