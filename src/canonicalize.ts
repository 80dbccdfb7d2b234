import { decodeProgram, decodeSpecs } from "./decode";
import { encodeProgram, encodeSpecs } from "./encode";
import { payloadKindOf } from "./json-form";
import type { DecodeOptions } from "./payload/header";

/** Validates, lifts and lowers a payload of either kind: its canonical bytes, as a peer re-sends them. */
export function canonicalizePayload(bytes: Uint8Array, options: DecodeOptions = {}): Uint8Array {
  if (payloadKindOf(bytes) === "program") return encodeProgram(decodeProgram(bytes, options));
  const { treedef, leaves } = decodeSpecs(bytes, options);
  return encodeSpecs(treedef, leaves);
}
