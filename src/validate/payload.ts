import type { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Header, PayloadKind } from "../../gen/ts/colocated/v1/payload";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { SCHEMA_MAJOR_VERSION } from "../version";

/** Options every decode accepts. */
export interface DecodeOptions {
  /** Bounds on sizes and counts; unset ones take DEFAULT_LIMITS. */
  limits?: Partial<DecodeLimits>;
  /** Refuse payloads of a newer minor version than this, as a negotiated RPC version does. */
  maxMinorVersion?: number;
}

interface MessageDecoder<T> {
  decode(input: BinaryReader | Uint8Array): T;
}

/** Parses payload bytes into a message; any failure of the protobuf layer is `malformed`. */
export function parsePayload<T>(
  type: MessageDecoder<T>,
  bytes: Uint8Array,
  limits: DecodeLimits,
): T {
  if (bytes.length > limits.maxPayloadBytes) {
    throw new DecodeError(
      "payload",
      "limit-exceeded",
      `${bytes.length} bytes pass the limit of ${limits.maxPayloadBytes}`,
    );
  }
  try {
    return type.decode(bytes);
  } catch (error) {
    throw new DecodeError(
      "payload",
      "malformed",
      `not a valid protobuf message (${(error as Error).message})`,
    );
  }
}

/** Checks the header: major version 1, the expected kind, and a minor version within reach. */
export function checkHeader(
  header: Header | undefined,
  kind: PayloadKind,
  options: DecodeOptions,
): void {
  if (!header)
    throw new DecodeError("header", "unsupported-version", "no header: not a colocated.v1 payload");
  if (header.majorVersion !== SCHEMA_MAJOR_VERSION) {
    throw new DecodeError(
      "header.major_version",
      "unsupported-version",
      `schema major version ${header.majorVersion}; this decoder reads ${SCHEMA_MAJOR_VERSION}`,
    );
  }
  if (options.maxMinorVersion !== undefined && header.minorVersion > options.maxMinorVersion) {
    throw new DecodeError(
      "header.minor_version",
      "unsupported-version",
      `minor version ${header.minorVersion} is newer than the agreed ${options.maxMinorVersion}`,
    );
  }
  if (header.kind !== kind) {
    throw new DecodeError(
      "header.kind",
      "wrong-payload-kind",
      `this is a ${kindName(header.kind)} payload, not a ${kindName(kind)} payload`,
    );
  }
}

function kindName(kind: PayloadKind): string {
  switch (kind) {
    case PayloadKind.PAYLOAD_KIND_SPECS:
      return "specs";
    case PayloadKind.PAYLOAD_KIND_PROGRAM:
      return "program";
    default:
      return `kind-${kind}`;
  }
}
