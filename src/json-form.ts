import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import {
  PayloadEnvelope,
  PayloadKind,
  ProgramPayload,
  SpecsPayload,
} from "../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs } from "./decode";
import { DecodeError } from "./errors";
import type { DecodeOptions } from "./payload/header";
import { walkMessages } from "./unknown-fields";

/** The JSON form's key for a message's unknown fields: field tag to base64 values. */
export const UNKNOWN_FIELDS_KEY = "@unknown";

const JSON_SIDE = { secondIsJson: true };

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Which payload message some bytes hold, read from their header. */
export function payloadKindOf(bytes: Uint8Array): "specs" | "program" {
  let kind: PayloadKind | undefined;
  try {
    kind = PayloadEnvelope.decode(bytes).header?.kind;
  } catch (error) {
    throw new DecodeError(
      "payload",
      "malformed",
      `not a valid protobuf message (${(error as Error).message})`,
    );
  }
  if (kind === PayloadKind.PAYLOAD_KIND_SPECS) return "specs";
  if (kind === PayloadKind.PAYLOAD_KIND_PROGRAM) return "program";
  throw new DecodeError(
    "header.kind",
    "wrong-payload-kind",
    `not a known payload kind (${kind ?? "no header"})`,
  );
}

/**
 * The payload's stable JSON form: the proto3 JSON mapping of its message, with each message's
 * unknown fields under "@unknown" and enum values this schema lacks as numbers. The payload is
 * fully validated first.
 */
export function payloadToJson(bytes: Uint8Array, options: DecodeOptions = {}): Json {
  const kind = payloadKindOf(bytes);
  if (kind === "specs") {
    decodeSpecs(bytes, options);
    const message = SpecsPayload.decode(bytes);
    return overlayToJson(message, SpecsPayload.toJSON(message)) as Json;
  }
  decodeProgram(bytes, options);
  const message = ProgramPayload.decode(bytes);
  return overlayToJson(message, ProgramPayload.toJSON(message)) as Json;
}

/** Writes a payload back from its JSON form; the bytes of payloadToJson's input come back. */
export function payloadFromJson(json: unknown): Uint8Array {
  const kind = (json as { header?: { kind?: unknown } })?.header?.kind;
  if (kind === "PAYLOAD_KIND_SPECS") {
    const message = SpecsPayload.fromJSON(json);
    overlayFromJson(message, json);
    return SpecsPayload.encode(message).finish();
  }
  if (kind === "PAYLOAD_KIND_PROGRAM") {
    const message = ProgramPayload.fromJSON(json);
    overlayFromJson(message, json);
    return ProgramPayload.encode(message).finish();
  }
  throw new Error(
    `header.kind must be PAYLOAD_KIND_SPECS or PAYLOAD_KIND_PROGRAM, got ${JSON.stringify(kind)}`,
  );
}

/** Adds what ts-proto's toJSON leaves out: unknown fields, and unknown enum numbers. */
function overlayToJson(message: unknown, json: unknown): unknown {
  walkMessages(
    message,
    json,
    (m, j) => {
      const unknown = m._unknownFields as Record<string, Uint8Array[]> | undefined;
      if (unknown && Object.keys(unknown).length > 0) {
        j[UNKNOWN_FIELDS_KEY] = Object.fromEntries(
          Object.entries(unknown).map(([tag, values]) => [tag, values.map((v) => base64Encode(v))]),
        );
      }
      for (const [key, value] of Object.entries(j)) {
        if (value === "UNRECOGNIZED" && typeof m[key] === "number") j[key] = m[key];
        if (Array.isArray(value) && Array.isArray(m[key])) {
          j[key] = value.map((v, i) => (v === "UNRECOGNIZED" ? (m[key] as number[])[i] : v));
        }
      }
    },
    JSON_SIDE,
  );
  return json;
}

/** Puts unknown fields and unknown enum numbers from the JSON form back into the message. */
function overlayFromJson(message: unknown, json: unknown): void {
  walkMessages(
    message,
    json,
    (m, j) => {
      const unknown = j[UNKNOWN_FIELDS_KEY] as Record<string, string[]> | undefined;
      if (unknown) {
        m._unknownFields = Object.fromEntries(
          Object.entries(unknown).map(([tag, values]) => [tag, values.map((v) => base64Decode(v))]),
        );
      }
      for (const [key, value] of Object.entries(j)) {
        if (typeof value === "number" && m[key] === -1) m[key] = value;
        if (Array.isArray(value) && Array.isArray(m[key])) {
          const values = m[key] as unknown[];
          for (const [i, v] of value.entries()) {
            if (typeof v === "number" && values[i] === -1) values[i] = v;
          }
        }
      }
    },
    JSON_SIDE,
  );
}
