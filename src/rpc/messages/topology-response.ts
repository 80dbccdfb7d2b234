import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { GetTopologyResponseSchema } from "../../../gen/es/colocated/v1/service_pb";
import { DecodeError } from "../../errors";

const FIELD = GetTopologyResponseSchema.field;

/** A GetTopology answer's bytes, read only as far as a WorkerGroup compares them. */
export interface TopologyBytes {
  processCount: number;
  processIndex: number;
  /**
   * The bytes of every device, a view: from the first device's tag to the last device's end,
   * when nothing else lies between them (as a worker writes them); else undefined.
   */
  devices: Uint8Array | undefined;
}

/**
 * Reads a GetTopology answer's two numbers and where its devices lie, without decoding the
 * devices: every member of a job lists the same ones, so a group decodes one member's and
 * compares the others' bytes with them. DecodeError when the bytes are not a message.
 */
export function readTopologyBytes(bytes: Uint8Array): TopologyBytes {
  const reader = new BinaryReader(bytes);
  const read: TopologyBytes = { processCount: 0, processIndex: 0, devices: undefined };
  let start = -1;
  let end = -1;
  let broken = false;
  try {
    while (reader.pos < reader.len) {
      const at = reader.pos;
      const [field, wire] = reader.tag();
      if (field === FIELD.devices.number && wire === WireType.LengthDelimited) {
        if (start < 0) start = at;
        else if (end !== at) broken = true; // another field between devices
        reader.skip(wire, field);
        end = reader.pos;
      } else if (field === FIELD.processCount.number && wire === WireType.Varint) {
        read.processCount = reader.uint32();
      } else if (field === FIELD.processIndex.number && wire === WireType.Varint) {
        read.processIndex = reader.uint32();
      } else reader.skip(wire, field);
    }
  } catch (error) {
    const detail = `the worker's GetTopologyResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
  if (!broken) read.devices = start < 0 ? bytes.subarray(0, 0) : bytes.subarray(start, end);
  return read;
}
