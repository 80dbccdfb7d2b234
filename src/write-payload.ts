import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { SpecsPayloadSchema } from "../gen/es/colocated/v1/payload_pb";
import { SharedObjectTableSchema } from "../gen/es/colocated/v1/table_pb";
import { Header, Specs, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { Entry } from "../gen/ts/colocated/v1/table";
import { isSettled } from "./settled";

/**
 * Writing a payload message: the bytes are exactly the generated encoder's, and a settled part
 * (a table entry kept in its value's slot, a specs' tree and leaves kept with the tree) is
 * encoded once per process and copied in after, so a program's specs sent on every call are
 * not encoded again.
 */

/** A generated message's encoder. */
interface Encoder<M> {
  encode(message: M, writer?: BinaryWriter): BinaryWriter;
}

/** The tag of a length-delimited field: its number and wire type 2. */
const lengthDelimited = (field: { number: number }) => (field.number << 3) | 2;
const HEADER = lengthDelimited(SpecsPayloadSchema.field.header);
const TABLE = lengthDelimited(SpecsPayloadSchema.field.table);
const SPECS = lengthDelimited(SpecsPayloadSchema.field.specs);
const ENTRY = lengthDelimited(SharedObjectTableSchema.field.entries);

/** The bytes of settled messages, written once. */
const ENCODED = new WeakMap<object, Uint8Array>();

/** Writes a SpecsPayload message as bytes. */
export function writeSpecsPayload(message: SpecsPayload): Uint8Array {
  const { header, table, specs } = message;
  // Unknown fields of the envelope go where the generated encoder puts them.
  if (message._unknownFields !== undefined || table?._unknownFields !== undefined) {
    return SpecsPayload.encode(message).finish();
  }
  const writer = new BinaryWriter();
  if (header !== undefined) Header.encode(header, writer.uint32(HEADER).fork()).join();
  if (table !== undefined) {
    writer.uint32(TABLE).fork();
    for (const entry of table.entries) writePart(writer, ENTRY, entry, Entry);
    writer.join();
  }
  if (specs !== undefined) writePart(writer, SPECS, specs, Specs);
  return writer.finish();
}

/** Writes one length-delimited message field: its kept bytes if it is settled. */
function writePart<M extends object>(
  writer: BinaryWriter,
  tag: number,
  message: M,
  encoder: Encoder<M>,
): void {
  writer.uint32(tag);
  if (!isSettled(message)) {
    encoder.encode(message, writer.fork()).join();
    return;
  }
  let bytes = ENCODED.get(message);
  if (bytes === undefined) {
    bytes = encoder.encode(message).finish();
    ENCODED.set(message, bytes);
  }
  writer.bytes(bytes);
}
