import { PayloadEnvelope } from "../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs, decodeValue } from "./decode";
import { type EncodeOptions, encodeProgram, encodeSpecs, encodeValue } from "./encode";
import { type DecodeOptions, payloadKindOf } from "./payload/header";
import { lift as liftWriter } from "./payload/writer";
import { SCHEMA_MINOR_VERSION } from "./version";

/** Validates, lifts and lowers a payload of any kind: its canonical bytes, as a peer re-sends them. */
export function canonicalizePayload(bytes: Uint8Array, options: DecodeOptions = {}): Uint8Array {
  const kind = payloadKindOf(bytes);
  if (kind === "program") {
    const program = decodeProgram(bytes, options);
    return encodeProgram(program, sameVersion(bytes));
  }
  if (kind === "value") {
    const { treedef, leaves } = decodeValue(bytes, options);
    return encodeValue(treedef, leaves, sameVersion(bytes));
  }
  const { treedef, leaves } = decodeSpecs(bytes, options);
  return encodeSpecs(treedef, leaves, sameVersion(bytes));
}

/**
 * Targets a decoded payload's own minor version (a newer one than ours stays as carried), and
 * names its writer: a peer re-sending it passes on who wrote it.
 */
function sameVersion(bytes: Uint8Array): EncodeOptions {
  const header = PayloadEnvelope.decode(bytes).header;
  const minor = header?.minorVersion ?? 0;
  const writer = header?.writer && liftWriter(header.writer);
  return minor <= SCHEMA_MINOR_VERSION ? { targetMinorVersion: minor, writer } : { writer };
}
