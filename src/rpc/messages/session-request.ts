import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { SessionCallSchema, SessionRequestSchema } from "../../../gen/es/colocated/v1/service_pb";
import type { ShardIndex } from "../../shard-indices";
import type { ShardLayout } from "../sharded/shard-layout";
import { chunkFrame } from "./sharded-request";

const REQUEST = SessionRequestSchema.field;
const CALL = SessionCallSchema.field;
/** The tags a call's message starts with. */
const CALL_TAG = (REQUEST.call.number << 3) | WireType.LengthDelimited;
const ID_TAG = (CALL.id.number << 3) | WireType.Varint;

/** One input shard a session call carries: its leaf, where it lies, its bytes' layout. */
export interface SessionInput {
  leaf: number;
  index: ShardIndex;
  layout: ShardLayout;
}

/** Where one input shard's bytes go in a template, and where they come from. */
interface Hole {
  leaf: number;
  layout: ShardLayout;
  at: number;
}

/**
 * A member's SessionCall for one program, written once: the start, and each input shard as
 * one chunk with a hole for its data (field numbers from the schema's descriptors). A call
 * then costs one buffer: its id, the template, each shard's data read in place from the
 * caller's arrays into its hole, and the fields every member's call shares (callTail).
 */
export class SessionCallTemplate {
  private readonly body: Uint8Array;
  private readonly holes: Hole[] = [];

  constructor(start: Uint8Array, inputs: readonly SessionInput[]) {
    const parts: Uint8Array[] = [
      new BinaryWriter().tag(CALL.start.number, WireType.LengthDelimited).bytes(start).finish(),
    ];
    let at = parts[0].length;
    for (const { leaf, index, layout } of inputs) {
      const length = layout.byteLength;
      const { before, after } = chunkFrame(leaf, index, layout, 0, length, CALL.inputs.number);
      this.holes.push({ leaf, layout, at: at + before.length });
      parts.push(before, new Uint8Array(length), after);
      at += before.length + length + after.length;
    }
    this.body = Buffer.concat(parts);
  }

  /** The SessionRequest bytes of call `id`, its data read from `globals`, ending with `tail`. */
  message(id: number, globals: readonly Uint8Array[], tail: Uint8Array): Uint8Array {
    // Two tags and two varints around the template, written in place: a call is one buffer.
    const size = varintLength(ID_TAG) + varintLength(id) + this.body.length + tail.length;
    const message = Buffer.allocUnsafe(varintLength(CALL_TAG) + varintLength(size) + size);
    const head = writeVarint(message, writeVarint(message, 0, CALL_TAG), size);
    const base = writeVarint(message, writeVarint(message, head, ID_TAG), id);
    message.set(this.body, base);
    for (const { leaf, layout, at } of this.holes) {
      layout.copyTo(globals[leaf], 0, layout.byteLength, message, base + at);
    }
    message.set(tail, base + this.body.length);
    return message;
  }
}

/** How many bytes protobuf's varint of `n` (a non-negative integer below 2^53) takes. */
function varintLength(n: number): number {
  let length = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    length++;
  }
  return length;
}

/** Writes `n`'s varint at `at` (as BinaryWriter would) and returns where it ends. */
function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 128) {
    out[at++] = (n % 128) | 128;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/** The SessionCall fields every member's call shares: its time left and its name in the job. */
export function callTail(timeoutMs: number, jobCallId: string): Uint8Array {
  const writer = new BinaryWriter();
  if (timeoutMs > 0) writer.tag(CALL.timeoutMs.number, WireType.Varint).uint64(timeoutMs);
  if (jobCallId) writer.tag(CALL.jobCallId.number, WireType.LengthDelimited).string(jobCallId);
  return writer.finish();
}

/** A SessionRequest that cancels call `id`. */
export function cancelMessage(id: number): Uint8Array {
  return new BinaryWriter().tag(REQUEST.cancel.number, WireType.Varint).uint64(id).finish();
}
