import { ExecuteShardedRequest, type ExecuteStart } from "../../gen/ts/colocated/v1/service";
import type { ShardIndex } from "../shard-indices";
import type { ShardLayout } from "./shard-layout";

/**
 * ExecuteShardedRequest messages as bytes. A chunk's message is written by hand with its data
 * gathered from the global array straight into it: one copy per chunk, where building the
 * message and encoding it made three (gather, encode, and the generated serializer's).
 */

/** The `start` message. */
export function startMessage(start: ExecuteStart): Uint8Array {
  return ExecuteShardedRequest.encode({ part: { $case: "start", value: start } }).finish();
}

/** The `end` message: field 3, true. */
export const END_MESSAGE = Uint8Array.of(0x18, 0x01);

/** One chunk (ShardChunk in field 2): the shard's bytes [offset, offset + length). */
export function chunkMessage(
  leaf: number,
  index: ShardIndex | undefined,
  layout: ShardLayout,
  global: Uint8Array,
  offset: number,
  length: number,
): Uint8Array {
  const head: number[] = [];
  if (leaf !== 0) head.push(0x08, ...varint(leaf));
  if (index !== undefined) {
    const start = index.start.flatMap(varint);
    const stop = index.stop.flatMap(varint);
    const packed = [
      ...(start.length ? [0x0a, ...varint(start.length), ...start] : []),
      ...(stop.length ? [0x12, ...varint(stop.length), ...stop] : []),
    ];
    head.push(0x12, ...varint(packed.length), ...packed);
  }
  if (offset !== 0) head.push(0x18, ...varint(offset));
  if (length !== 0) head.push(0x22, ...varint(length));
  const last = offset + length === layout.byteLength;
  const size = head.length + length + (last ? 2 : 0);
  const outer = [0x12, ...varint(size)];
  const message = Buffer.allocUnsafe(outer.length + size); // every byte is written below
  message.set(outer, 0);
  message.set(head, outer.length);
  layout.copyTo(global, offset, length, message, outer.length + head.length);
  if (last) message.set([0x28, 0x01], message.length - 2);
  return message;
}

/** A non-negative integer (up to 2^53) as a protobuf varint. */
export function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}
