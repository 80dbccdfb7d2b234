import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { ArrayDataSchema, ExecuteResponseSchema } from "../../../gen/es/colocated/v1/service_pb";
import { DecodeError } from "../../errors";

const RESPONSE = ExecuteResponseSchema.field;
const DATA = ArrayDataSchema.field.data.number;

/** An ExecuteResponse as views of its bytes: the SpecsPayload's, and each output's data. */
export interface ExecuteResponseBytes {
  /** The output_specs field as the worker wrote it; undefined when absent. */
  outputSpecs: Uint8Array | undefined;
  outputs: Uint8Array[];
}

/**
 * Reads an ExecuteResponse's two fields from its bytes without building its messages: the
 * SpecsPayload is decoded once, by decodeSpecs, not parsed into a message and written again.
 * Unknown fields are skipped, as a protobuf decoder skips them; bytes that are not a
 * message throw DecodeError.
 */
export function readExecuteResponse(bytes: Uint8Array): ExecuteResponseBytes {
  const reader = new BinaryReader(bytes);
  const response: ExecuteResponseBytes = { outputSpecs: undefined, outputs: [] };
  try {
    while (reader.pos < reader.len) {
      const [field, wire] = reader.tag();
      if (wire !== WireType.LengthDelimited) reader.skip(wire, field);
      else if (field === RESPONSE.outputSpecs.number) response.outputSpecs = reader.bytes();
      else if (field === RESPONSE.outputs.number) response.outputs.push(arrayData(reader.bytes()));
      else reader.skip(wire, field);
    }
  } catch (error) {
    if (error instanceof DecodeError) throw error;
    const detail = `the worker's ExecuteResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
  return response;
}

/** ArrayData's `data`: the last one given, empty when absent. */
function arrayData(message: Uint8Array): Uint8Array {
  const reader = new BinaryReader(message);
  let data = message.subarray(0, 0);
  while (reader.pos < reader.len) {
    const [field, wire] = reader.tag();
    if (field === DATA && wire === WireType.LengthDelimited) data = reader.bytes();
    else reader.skip(wire, field);
  }
  return data;
}
