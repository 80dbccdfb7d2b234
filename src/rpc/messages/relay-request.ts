import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  RelayChildSchema,
  RelayedMessageSchema,
  RelayRequestSchema,
} from "../../../gen/es/colocated/v1/service_pb";

const REQUEST = RelayRequestSchema.field;
const CHILD = RelayChildSchema.field;
const MESSAGE = RelayedMessageSchema.field;

/**
 * RelayRequest messages as bytes, written field by field (numbers from the schema's
 * descriptors): a child's SessionRequest is copied once, into the request, where building a
 * RelayedMessage and encoding it would copy it twice.
 */

/** The first RelayRequest of a stream: each child (by its index) and its target. */
export function childrenMessage(children: readonly string[]): Uint8Array {
  const writer = new BinaryWriter();
  children.forEach((target, child) => {
    writer
      .tag(REQUEST.children.number, WireType.LengthDelimited)
      .fork()
      .tag(CHILD.child.number, WireType.Varint)
      .uint32(child)
      .tag(CHILD.target.number, WireType.LengthDelimited)
      .string(target)
      .join();
  });
  return writer.finish();
}

/** Adds to `batch` (a RelayRequest being written) one SessionRequest for a child's session. */
export function addRelayedMessage(
  batch: BinaryWriter,
  child: number,
  session: number,
  message: Uint8Array,
): void {
  batch
    .tag(REQUEST.messages.number, WireType.LengthDelimited)
    .fork()
    .tag(MESSAGE.child.number, WireType.Varint)
    .uint32(child)
    .tag(MESSAGE.session.number, WireType.Varint)
    .uint32(session)
    .tag(MESSAGE.message.number, WireType.LengthDelimited)
    .bytes(message)
    .join();
}
