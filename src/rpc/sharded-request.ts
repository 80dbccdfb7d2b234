import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  ExecuteShardedRequestSchema,
  ShardChunkSchema,
  ShardIndexSchema,
} from "../../gen/es/colocated/v1/service_pb";
import { ExecuteShardedRequest, type ExecuteStart } from "../../gen/ts/colocated/v1/service";
import type { ShardIndex } from "../shard-indices";
import type { ShardLayout } from "./shard-layout";

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

/** One chunk (the request's `chunk` field): the shard's bytes [offset, offset + length). */
export function chunkMessage(
  leaf: number,
  index: ShardIndex | undefined,
  layout: ShardLayout,
  global: Uint8Array,
  offset: number,
  length: number,
): Uint8Array {
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
  const tail = last
    ? new BinaryWriter().tag(CHUNK.last.number, WireType.Varint).bool(true).finish()
    : EMPTY;
  const size = headBytes.length + length + tail.length;
  const outer = new BinaryWriter()
    .tag(REQUEST.chunk.number, WireType.LengthDelimited)
    .uint32(size)
    .finish();
  const message = Buffer.allocUnsafe(outer.length + size); // every byte is written below
  message.set(outer, 0);
  message.set(headBytes, outer.length);
  layout.copyTo(global, offset, length, message, outer.length + headBytes.length);
  message.set(tail, message.length - tail.length);
  return message;
}

const EMPTY = new Uint8Array(0);

/** A packed repeated uint64 field, left out when empty (as protobuf writes it). */
function packed(writer: BinaryWriter, field: number, values: readonly number[]): void {
  if (values.length === 0) return;
  writer.tag(field, WireType.LengthDelimited).fork();
  for (const v of values) writer.uint64(v);
  writer.join();
}
