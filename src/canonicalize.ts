import { PayloadEnvelope } from "../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs } from "./decode";
import { type EncodeOptions, encodeProgram, encodeSpecs } from "./encode";
import { payloadKindOf } from "./json-form";
import type { DecodeOptions } from "./payload/header";
import { SCHEMA_MINOR_VERSION } from "./version";

/** Validates, lifts and lowers a payload of either kind: its canonical bytes, as a peer re-sends them. */
export function canonicalizePayload(bytes: Uint8Array, options: DecodeOptions = {}): Uint8Array {
  if (payloadKindOf(bytes) === "program") {
    const program = decodeProgram(bytes, options);
    return encodeProgram(program, sameVersion(bytes));
  }
  const { treedef, leaves } = decodeSpecs(bytes, options);
  return encodeSpecs(treedef, leaves, sameVersion(bytes));
}

/** Targets a decoded payload's own minor version; a newer one than ours stays as carried. */
function sameVersion(bytes: Uint8Array): EncodeOptions {
  const minor = PayloadEnvelope.decode(bytes).header?.minorVersion ?? 0;
  return minor <= SCHEMA_MINOR_VERSION ? { targetMinorVersion: minor } : {};
}
