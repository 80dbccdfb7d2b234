import type { DescField } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  ProgramPayloadSchema,
  SpecsPayloadSchema,
  ValuePayloadSchema,
} from "../gen/es/colocated/v1/payload_pb";
import { SharedObjectTableSchema } from "../gen/es/colocated/v1/table_pb";
import {
  FunctionMessage,
  Header,
  ProgramPayload,
  Specs,
  SpecsPayload,
  Value,
  ValuePayload,
} from "../gen/ts/colocated/v1/payload";
import { Entry, type SharedObjectTable } from "../gen/ts/colocated/v1/table";
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

/** What every payload begins with. */
interface Envelope {
  header?: Header | undefined;
  table?: SharedObjectTable | undefined;
  _unknownFields?: unknown;
}

/** A field's tag: its number and wire type, as its message's descriptor gives them. */
const tag = (field: DescField, wireType: WireType) => (field.number << 3) | wireType;
const messageTag = (field: DescField) => tag(field, WireType.LengthDelimited);

/** Each payload's fields, by its descriptor: a header and a table, then its own parts. */
const SPECS = {
  header: messageTag(SpecsPayloadSchema.field.header),
  table: messageTag(SpecsPayloadSchema.field.table),
  specs: messageTag(SpecsPayloadSchema.field.specs),
};
const PROGRAM = {
  header: messageTag(ProgramPayloadSchema.field.header),
  table: messageTag(ProgramPayloadSchema.field.table),
  function: messageTag(ProgramPayloadSchema.field.function),
  inputSpecs: messageTag(ProgramPayloadSchema.field.inputSpecs),
  outputSpecs: messageTag(ProgramPayloadSchema.field.outputSpecs),
  devices: tag(ProgramPayloadSchema.field.devices, WireType.Varint),
};
const VALUE = {
  header: messageTag(ValuePayloadSchema.field.header),
  table: messageTag(ValuePayloadSchema.field.table),
  value: messageTag(ValuePayloadSchema.field.value),
};
const ENTRY = messageTag(SharedObjectTableSchema.field.entries);

/** The bytes of settled messages, written once. */
const ENCODED = new WeakMap<object, Uint8Array>();

/** Writes a SpecsPayload message as bytes. */
export function writeSpecsPayload(message: SpecsPayload): Uint8Array {
  return writePayload(message, SpecsPayload, SPECS, (writer) => {
    if (message.specs !== undefined) writePart(writer, SPECS.specs, message.specs, Specs);
  });
}

/** Writes a ProgramPayload message as bytes. */
export function writeProgramPayload(message: ProgramPayload): Uint8Array {
  const { function: fn, inputSpecs, outputSpecs, devices } = message;
  return writePayload(message, ProgramPayload, PROGRAM, (writer) => {
    if (fn !== undefined) writePart(writer, PROGRAM.function, fn, FunctionMessage);
    if (inputSpecs !== undefined) writePart(writer, PROGRAM.inputSpecs, inputSpecs, Specs);
    if (outputSpecs !== undefined) writePart(writer, PROGRAM.outputSpecs, outputSpecs, Specs);
    if (devices !== undefined) writer.uint32(PROGRAM.devices).uint32(devices);
  });
}

/** Writes a ValuePayload message as bytes. */
export function writeValuePayload(message: ValuePayload): Uint8Array {
  return writePayload(message, ValuePayload, VALUE, (writer) => {
    if (message.value !== undefined) writePart(writer, VALUE.value, message.value, Value);
  });
}

/**
 * Writes a payload's header and table, then its own parts (`writeParts`, in field order). A
 * payload whose envelope carries unknown fields is written by the generated encoder, which puts
 * them last.
 */
function writePayload<M extends Envelope>(
  message: M,
  generated: Encoder<M>,
  envelope: { header: number; table: number },
  writeParts: (writer: BinaryWriter) => void,
): Uint8Array {
  const { header, table } = message;
  if (message._unknownFields !== undefined || table?._unknownFields !== undefined) {
    return generated.encode(message).finish();
  }
  const writer = takeWriter();
  try {
    if (header !== undefined) Header.encode(header, writer.uint32(envelope.header).fork()).join();
    if (table !== undefined) {
      writer.uint32(envelope.table).fork();
      for (const entry of table.entries) writePart(writer, ENTRY, entry, Entry);
      writer.join();
    }
    writeParts(writer);
    const bytes = writer.finish();
    if (bytes.length <= KEPT_WRITER_BYTES) spare = writer;
    return bytes;
  } catch (error) {
    spare = new BinaryWriter(); // the failed writer's state is not to be trusted
    throw error;
  }
}

/**
 * One writer is kept from payload to payload, so its buffer does not grow again from nothing
 * (four allocations for a payload of a kilobyte); one that grew past this is let go.
 */
const KEPT_WRITER_BYTES = 1 << 20;
let spare: BinaryWriter | undefined = new BinaryWriter();

/** The kept writer, or a new one while it is in use. */
function takeWriter(): BinaryWriter {
  const writer = spare ?? new BinaryWriter();
  spare = undefined;
  return writer;
}

/** Writes one message field: its kept bytes if it is settled. */
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
