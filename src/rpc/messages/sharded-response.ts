import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import {
  ExecuteShardedResponseSchema,
  ShardChunkSchema,
  ShardIndexSchema,
} from "../../../gen/es/colocated/v1/service_pb";
import { DecodeError } from "../../errors";

const RESPONSE = ExecuteShardedResponseSchema.field;
const CHUNK = ShardChunkSchema.field;
const INDEX = ShardIndexSchema.field;

/** A shard chunk as read from the worker's bytes: numbers, and its data a view of the message. */
export interface ChunkView {
  leaf: number;
  /** Set on a shard's first chunk. */
  index?: { start: number[]; stop: number[] };
  offset: number;
  data: Uint8Array;
  last: boolean;
}

/** One message of the worker's stream: the output specs' bytes, a chunk, the end, or none of them. */
export type ShardedResponse =
  | { $case: "outputSpecs"; value: Uint8Array }
  | { $case: "chunk"; value: ChunkView }
  | { $case: "end" }
  | undefined;

/**
 * Reads an ExecuteShardedResponse from its bytes without building its messages (as
 * execute-response.ts reads Execute's): the output specs stay the worker's SpecsPayload bytes,
 * decoded once by whoever needs them, and a chunk's data is a view, not a copy. Of several
 * parts the last wins, as protobuf's oneof has it; unknown fields are skipped; bytes that are
 * not a message throw DecodeError.
 */
export function readShardedResponse(bytes: Uint8Array): ShardedResponse {
  const reader = new BinaryReader(bytes);
  let part: ShardedResponse;
  try {
    while (reader.pos < reader.len) {
      const [field, wire] = reader.tag();
      if (field === RESPONSE.outputSpecs.number && wire === WireType.LengthDelimited) {
        part = { $case: "outputSpecs", value: reader.bytes() };
      } else if (field === RESPONSE.chunk.number && wire === WireType.LengthDelimited) {
        part = { $case: "chunk", value: readChunkFrom(reader, reader.uint32() + reader.pos) };
      } else if (field === RESPONSE.end.number && wire === WireType.Varint) {
        reader.bool(); // the oneof's case is what counts, as in the generated decoder
        part = { $case: "end" };
      } else reader.skip(wire, field);
    }
  } catch (error) {
    if (error instanceof DecodeError) throw error;
    const detail = `the worker's ExecuteShardedResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
  return part;
}

/**
 * The ShardChunk that `reader` holds from its position up to `end`, read with the same reader
 * (a chunk and its index are read without a reader of their own: a message of many chunks
 * makes no garbage per chunk but the chunk itself).
 */
export function readChunkFrom(reader: BinaryReader, end: number): ChunkView {
  const chunk: ChunkView = { leaf: 0, offset: 0, data: EMPTY, last: false };
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    if (field === CHUNK.leaf.number && wire === WireType.Varint) chunk.leaf = reader.uint32();
    else if (field === CHUNK.index.number && wire === WireType.LengthDelimited) {
      chunk.index = readIndex(reader, reader.uint32() + reader.pos);
    } else if (field === CHUNK.offset.number && wire === WireType.Varint) {
      chunk.offset = uint53(reader, "offset");
    } else if (field === CHUNK.data.number && wire === WireType.LengthDelimited) {
      chunk.data = reader.bytes();
    } else if (field === CHUNK.last.number && wire === WireType.Varint) chunk.last = reader.bool();
    else reader.skip(wire, field);
  }
  ended(reader, end);
  return chunk;
}

/** A nested message must end where its length said: a field that runs past it is malformed. */
function ended(reader: BinaryReader, end: number): void {
  if (reader.pos !== end)
    throw new Error(`a field runs ${reader.pos - end} bytes past its message`);
}

const EMPTY = new Uint8Array(0);

/** A ShardIndex up to `end`: `start` and `stop`, packed (as written) or not (as protobuf also reads them). */
function readIndex(reader: BinaryReader, end: number): { start: number[]; stop: number[] } {
  const index = { start: [] as number[], stop: [] as number[] };
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    const into =
      field === INDEX.start.number ? index.start : field === INDEX.stop.number ? index.stop : null;
    if (into === null) reader.skip(wire, field);
    else if (wire === WireType.Varint) into.push(uint53(reader, "index"));
    else if (wire === WireType.LengthDelimited) {
      const packedEnd = reader.uint32() + reader.pos;
      while (reader.pos < packedEnd) into.push(uint53(reader, "index"));
      ended(reader, packedEnd);
    } else reader.skip(wire, field);
  }
  ended(reader, end);
  return index;
}

/** A uint64 as a number; beyond 2^53 no array has it, so it is refused. */
export function uint53(reader: BinaryReader, path: string): number {
  const value = reader.uint64();
  const n = Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new DecodeError(`chunk.${path}`, "invalid-value", `${value}: beyond any array's size`);
  }
  return n;
}
