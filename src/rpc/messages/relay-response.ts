import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { status } from "@grpc/grpc-js";
import {
  RelayedEndSchema,
  RelayedMessageSchema,
  RelayedTakenSchema,
  RelayResponseSchema,
} from "../../../gen/es/colocated/v1/service_pb";
import { DecodeError } from "../../errors";
import { type CallStatus, readStatus } from "./session-response";

const RESPONSE = RelayResponseSchema.field;
const MESSAGE = RelayedMessageSchema.field;
const END = RelayedEndSchema.field;
const TAKEN = RelayedTakenSchema.field;

/** What a RelayResponse carries, each in the order it came. */
export interface RelayedParts {
  /** A child's SessionResponse bytes (a view of the response), from its session `number`. */
  message(child: number, number: number, bytes: Uint8Array): void;
  /** The end of a child's session `number`, with its status. */
  end(child: number, number: number, code: status, details: string): void;
  /** The child's worker took its session `number`. */
  taken(child: number, number: number): void;
}

/**
 * Reads a RelayResponse from its bytes without building its messages, as session-response.ts
 * reads a SessionResponse: each child's message stays a view. Unknown fields are skipped;
 * bytes that are not a message throw DecodeError.
 */
export function readRelayResponse(bytes: Uint8Array, parts: RelayedParts): void {
  const reader = new BinaryReader(bytes);
  try {
    while (reader.pos < reader.len) {
      const [field, wire] = reader.tag();
      if (field === RESPONSE.messages.number && wire === WireType.LengthDelimited) {
        const { child, number, message } = readMessage(reader);
        parts.message(child, number, message);
      } else if (field === RESPONSE.ends.number && wire === WireType.LengthDelimited) {
        const { child, number, code, details } = readEnd(reader);
        parts.end(child, number, code, details);
      } else if (field === RESPONSE.taken.number && wire === WireType.LengthDelimited) {
        const { child, number } = readTaken(reader);
        parts.taken(child, number);
      } else reader.skip(wire);
    }
  } catch (error) {
    if (error instanceof DecodeError) throw error;
    const detail = `the relay's RelayResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
}

/** A RelayedMessage, its bytes a view. */
function readMessage(reader: BinaryReader): { child: number; number: number; message: Uint8Array } {
  const end = reader.uint32() + reader.pos;
  let [child, number] = [0, 0];
  let message: Uint8Array = new Uint8Array();
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    if (field === MESSAGE.child.number && wire === WireType.Varint) child = reader.uint32();
    else if (field === MESSAGE.session.number && wire === WireType.Varint) number = reader.uint32();
    else if (field === MESSAGE.message.number && wire === WireType.LengthDelimited) {
      message = reader.bytes();
    } else reader.skip(wire);
  }
  return { child, number, message };
}

/** A RelayedEnd: an end without a status is OK. */
function readEnd(reader: BinaryReader): {
  child: number;
  number: number;
  code: status;
  details: string;
} {
  const end = reader.uint32() + reader.pos;
  let [child, number] = [0, 0];
  let ended: CallStatus = { code: 0, message: "" };
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    if (field === END.child.number && wire === WireType.Varint) child = reader.uint32();
    else if (field === END.session.number && wire === WireType.Varint) number = reader.uint32();
    else if (field === END.status.number && wire === WireType.LengthDelimited) {
      ended = readStatus(reader, reader.uint32() + reader.pos);
    } else reader.skip(wire);
  }
  return { child, number, code: ended.code, details: ended.message };
}

/** A RelayedTaken. */
function readTaken(reader: BinaryReader): { child: number; number: number } {
  const end = reader.uint32() + reader.pos;
  let [child, number] = [0, 0];
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    if (field === TAKEN.child.number && wire === WireType.Varint) child = reader.uint32();
    else if (field === TAKEN.session.number && wire === WireType.Varint) number = reader.uint32();
    else reader.skip(wire);
  }
  return { child, number };
}
