import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { CallStatusSchema, SessionResponseSchema } from "../../../gen/es/colocated/v1/service_pb";
import { DecodeError } from "../../errors";
import { type ChunkView, readChunkFrom } from "./sharded-response";

const RESPONSE = SessionResponseSchema.field;
const STATUS = CallStatusSchema.field;

/** A status that ended a call: a gRPC status code and the worker's message. */
export interface CallStatus {
  code: number;
  message: string;
}

/** One part of a call's answer on a session, read from its bytes. */
export interface SessionPart {
  id: number;
  /** The output specs' SpecsPayload bytes, a view of the message. */
  outputSpecs?: Uint8Array;
  outputs: ChunkView[];
  end: boolean;
  status?: CallStatus;
  /** In place of `outputSpecs`: they are the last ones the session sent. */
  outputSpecsAsBefore: boolean;
}

/**
 * Reads a SessionResponse from its bytes without building its messages, as
 * sharded-response.ts reads ExecuteSharded's: the output specs and each chunk's data stay
 * views. Unknown fields are skipped; bytes that are not a message throw DecodeError.
 */
export function readSessionResponse(bytes: Uint8Array): SessionPart {
  const reader = new BinaryReader(bytes);
  const part: SessionPart = { id: 0, outputs: [], end: false, outputSpecsAsBefore: false };
  try {
    while (reader.pos < reader.len) {
      const [field, wire] = reader.tag();
      if (field === RESPONSE.id.number && wire === WireType.Varint) part.id = callId(reader);
      else if (field === RESPONSE.outputSpecs.number && wire === WireType.LengthDelimited) {
        part.outputSpecs = reader.bytes();
      } else if (field === RESPONSE.outputs.number && wire === WireType.LengthDelimited) {
        part.outputs.push(readChunkFrom(reader, reader.uint32() + reader.pos));
      } else if (field === RESPONSE.end.number && wire === WireType.Varint) {
        part.end = reader.bool();
      } else if (field === RESPONSE.outputSpecsAsBefore.number && wire === WireType.Varint) {
        part.outputSpecsAsBefore = reader.bool();
      } else if (field === RESPONSE.status.number && wire === WireType.LengthDelimited) {
        part.status = readStatus(reader, reader.uint32() + reader.pos);
      } else reader.skip(wire, field);
    }
  } catch (error) {
    if (error instanceof DecodeError) throw error;
    const detail = `the worker's SessionResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
  return part;
}

/** A CallStatus whose bytes run from the reader to `end`. */
export function readStatus(reader: BinaryReader, end: number): CallStatus {
  const status: CallStatus = { code: 0, message: "" };
  while (reader.pos < end) {
    const [field, wire] = reader.tag();
    if (field === STATUS.code.number && wire === WireType.Varint) status.code = reader.uint32();
    else if (field === STATUS.message.number && wire === WireType.LengthDelimited) {
      status.message = reader.string();
    } else reader.skip(wire, field);
  }
  if (reader.pos !== end) throw new Error("the status runs past its message");
  return status;
}

/** A call id as a number: ids count calls from 1, so one beyond 2^53 names none. */
function callId(reader: BinaryReader): number {
  const value = reader.uint64();
  const id = Number(value);
  if (!Number.isSafeInteger(id)) {
    throw new DecodeError("response.id", "invalid-value", `${value}: no call has this id`);
  }
  return id;
}
