import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import { ProgramPayload, SpecsPayload, ValuePayload } from "../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs, decodeValue } from "./decode";
import { type DecodeOptions, type PayloadKindName, payloadKindOf } from "./payload/header";
import { walkMessages } from "./unknown-fields";

// Read from the header (payload/header.ts); kept here too, where it was first exported.
export { payloadKindOf };

/** The JSON form's key for a message's unknown fields: field tag to base64 values. */
export const UNKNOWN_FIELDS_KEY = "@unknown";

const JSON_SIDE = { secondIsJson: true };

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What the JSON form needs of a payload kind: its decoder, and its message's generated code. */
interface PayloadForm {
  decode(bytes: Uint8Array, options: DecodeOptions): unknown;
  message: {
    decode(bytes: Uint8Array): unknown;
    encode(message: never): { finish(): Uint8Array };
    toJSON(message: never): unknown;
    fromJSON(json: unknown): unknown;
  };
}

const FORMS: Readonly<Record<PayloadKindName, PayloadForm>> = {
  specs: { decode: decodeSpecs, message: SpecsPayload },
  program: { decode: decodeProgram, message: ProgramPayload },
  value: { decode: decodeValue, message: ValuePayload },
};

/**
 * The payload's stable JSON form: the proto3 JSON mapping of its message, with each message's
 * unknown fields under "@unknown" and enum values this schema lacks as numbers. The payload is
 * fully validated first.
 */
export function payloadToJson(bytes: Uint8Array, options: DecodeOptions = {}): Json {
  const form = FORMS[payloadKindOf(bytes)];
  form.decode(bytes, options);
  const message = form.message.decode(bytes) as never;
  return overlayToJson(message, form.message.toJSON(message)) as Json;
}

/** Writes a payload back from its JSON form; the bytes of payloadToJson's input come back. */
export function payloadFromJson(json: unknown): Uint8Array {
  const kind = (json as { header?: { kind?: unknown } })?.header?.kind;
  const enumName = (name: string) => `PAYLOAD_KIND_${name.toUpperCase()}`;
  const name = (Object.keys(FORMS) as PayloadKindName[]).find((k) => enumName(k) === kind);
  if (!name) {
    const kinds = Object.keys(FORMS).map(enumName).join(", ");
    throw new Error(`header.kind must be one of ${kinds}, got ${JSON.stringify(kind)}`);
  }
  const form = FORMS[name];
  const message = form.message.fromJSON(json);
  overlayFromJson(message, json);
  return form.message.encode(message as never).finish();
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
