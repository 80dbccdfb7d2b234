import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { LoadProgramRequestSchema } from "../../../gen/es/colocated/v1/service_pb";

const LOAD = LoadProgramRequestSchema.field;

/** A LoadProgramRequest of program bytes, written around them (version 0 left out, as protobuf does). */
export function loadRequest(version: number, program: Uint8Array): Uint8Array {
  const writer = new BinaryWriter();
  if (version !== 0) writer.tag(LOAD.version.number, WireType.Varint).uint32(version);
  return writer.tag(LOAD.program.number, WireType.LengthDelimited).bytes(program).finish();
}
