import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  ExecuteShardedRequestSchema,
  ShardChunkSchema,
  ShardIndexSchema,
} from "../../../gen/es/colocated/v1/service_pb";
import { ExecuteShardedRequest, type ExecuteStart } from "../../../gen/ts/colocated/v1/service";
import type { ShardIndex } from "../../shard-indices";
import type { ShardLayout } from "../sharded/shard-layout";

/**
 * ExecuteShardedRequest messages as bytes. A chunk's fields are written by protobuf's writer
 * (field numbers from the schema's descriptors), and its data gathered from the global array
 * straight into the message: one copy per chunk, where building the message and encoding it
 * made three (gather, encode, and the generated serializer's).
 */

/** The `start` message. */
export function startMessage(start: ExecuteStart): Uint8Array {
  return ExecuteShardedRequest.encode({ part: { $case: "start", value: start } }).finish();
}

const REQUEST = ExecuteShardedRequestSchema.field;
const CHUNK = ShardChunkSchema.field;
const INDEX = ShardIndexSchema.field;

/** The `end` message. */
export const END_MESSAGE = new BinaryWriter()
  .tag(REQUEST.end.number, WireType.Varint)
  .bool(true)
  .finish();

/**
 * One chunk (the request's `chunk` field, or another message's ShardChunk `field`): the
 * shard's bytes [offset, offset + length).
 */
export function chunkMessage(
  leaf: number,
  index: ShardIndex | undefined,
  layout: ShardLayout,
  global: Uint8Array,
  offset: number,
  length: number,
  field: number = REQUEST.chunk.number,
): Uint8Array {
  const { before, after } = chunkFrame(leaf, index, layout, offset, length, field);
  const message = Buffer.allocUnsafe(before.length + length + after.length); // all written below
  message.set(before, 0);
  layout.copyTo(global, offset, length, message, before.length);
  message.set(after, before.length + length);
  return message;
}

/** A chunk's bytes around its data: the field's tag and length and the chunk's fields up to the data, and after it. */
export interface ChunkFrame {
  before: Uint8Array;
  after: Uint8Array;
}

/** The bytes of chunkMessage's message but its data, which goes between them. */
export function chunkFrame(
  leaf: number,
  index: ShardIndex | undefined,
  layout: ShardLayout,
  offset: number,
  length: number,
  field: number = REQUEST.chunk.number,
): ChunkFrame {
  // The chunk's fields in field order, up to its data's tag and length; the data follows.
  const head = new BinaryWriter();
  if (leaf !== 0) head.tag(CHUNK.leaf.number, WireType.Varint).uint32(leaf);
  if (index !== undefined) {
    head.tag(CHUNK.index.number, WireType.LengthDelimited).fork();
    packed(head, INDEX.start.number, index.start);
    packed(head, INDEX.stop.number, index.stop);
    head.join();
  }
  if (offset !== 0) head.tag(CHUNK.offset.number, WireType.Varint).uint64(offset);
  if (length !== 0) head.tag(CHUNK.data.number, WireType.LengthDelimited).uint32(length);
  const headBytes = head.finish();
  const last = offset + length === layout.byteLength;
  const after = last
    ? new BinaryWriter().tag(CHUNK.last.number, WireType.Varint).bool(true).finish()
    : EMPTY;
  const size = headBytes.length + length + after.length;
  const outer = new BinaryWriter().tag(field, WireType.LengthDelimited).uint32(size).finish();
  const before = new Uint8Array(outer.length + headBytes.length);
  before.set(outer, 0);
  before.set(headBytes, outer.length);
  return { before, after };
}

const EMPTY = new Uint8Array(0);

/** A packed repeated uint64 field, left out when empty (as protobuf writes it). */
function packed(writer: BinaryWriter, field: number, values: readonly number[]): void {
  if (values.length === 0) return;
  writer.tag(field, WireType.LengthDelimited).fork();
  for (const v of values) writer.uint64(v);
  writer.join();
}
