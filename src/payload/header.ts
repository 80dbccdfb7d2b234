import { BinaryReader } from "@bufbuild/protobuf/wire";
import {
  PayloadEnvelopeSchema,
  ProgramPayloadSchema,
  SpecsPayloadSchema,
} from "../../gen/es/colocated/v1/payload_pb";
import { type Header, PayloadEnvelope, PayloadKind } from "../../gen/ts/colocated/v1/payload";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type PackedIds, type PackedRecord, readPackedIds } from "../packed-ids";
import { SCHEMA_MAJOR_VERSION } from "../version";
import { checkWire } from "../wire-scan";

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

/**
 * Parses payload bytes into a message of the expected kind. The header is read and checked
 * first, so a newer major version or another payload kind is reported as such rather than
 * as malformed bytes; any failure of the protobuf layer is `malformed`.
 */
export function parsePayload<T>(
  type: MessageDecoder<T>,
  kind: PayloadKind,
  bytes: Uint8Array,
  options: DecodeOptions & { limits: DecodeLimits },
): { message: T; unknownFields: number; packedIds: ReadonlyMap<number, PackedIds> } {
  const { maxPayloadBytes } = options.limits;
  if (bytes.length > maxPayloadBytes) {
    const detail = `${bytes.length} bytes pass the limit of ${maxPayloadBytes}`;
    throw new DecodeError("payload", "limit-exceeded", detail);
  }
  // The wire scan comes first, so nothing is built of what the limits refuse.
  checkWire(bytes, PayloadEnvelopeSchema, options.limits);
  checkHeader(parse(PayloadEnvelope, bytes).header, kind, options);
  const records: PackedRecord[] = [];
  const unknownFields = checkWire(
    bytes,
    kind === PayloadKind.PAYLOAD_KIND_SPECS ? SpecsPayloadSchema : ProgramPayloadSchema,
    options.limits,
    records,
  );
  // A payload with newer fields keeps its messages whole, as the entries carrying them are
  // written back from them.
  const packedIds = unknownFields === 0 ? readPackedIds(bytes, records) : new Map();
  return { message: parse(type, bytes, packedIds), unknownFields, packedIds };
}

/**
 * Reads strings as protobuf requires them, valid UTF-8, as Python's runtime does; and steps
 * over the packed id lists read ahead (packed-ids.ts), leaving their fields empty. The
 * generated decoder reads a packed field as `end = reader.uint32() + reader.pos`, then values
 * while `pos < end`: at a list's length, uint32() moves to the list's end and returns 0, so no
 * value is read.
 */
class StrictReader extends BinaryReader {
  skips: readonly PackedIds[] = [];
  next = 0;
  /** Where the next list's length is, -1 for none. */
  skipAt = -1;

  constructor(bytes: Uint8Array, skips: readonly PackedIds[] = []) {
    super(bytes);
    // One function for every reader (a closure each, or a subclass, made every payload's
    // reads slower once one payload had lists, as calls through `uint32` could not be inlined).
    this.uint32 = uint32Skipping;
    if (skips.length === 0) return;
    this.skips = skips;
    this.skipAt = skips[0].lengthAt;
  }

  override string(): string {
    return super.string(true);
  }
}

/** BinaryReader's own uint32(), as its constructor installs it. */
const VARINT32 = new BinaryReader(new Uint8Array(0)).uint32;

function uint32Skipping(this: StrictReader): number {
  if (this.pos !== this.skipAt) return VARINT32.call(this);
  const { skips } = this;
  this.pos = skips[this.next].to;
  this.skipAt = ++this.next < skips.length ? skips[this.next].lengthAt : -1;
  return 0;
}

function parse<T>(
  type: MessageDecoder<T>,
  bytes: Uint8Array,
  packedIds?: ReadonlyMap<number, PackedIds>,
): T {
  try {
    const skips = packedIds ? [...packedIds.values()] : [];
    return type.decode(new StrictReader(bytes, skips));
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
}

/** Checks the header: major version 1, the expected kind, and a minor version within reach. */
function checkHeader(header: Header | undefined, kind: PayloadKind, options: DecodeOptions): void {
  if (!header) {
    throw new DecodeError("header", "unsupported-version", "no header: not a colocated.v1 payload");
  }
  if (header.majorVersion !== SCHEMA_MAJOR_VERSION) {
    const detail = `schema major version ${header.majorVersion}; this decoder reads ${SCHEMA_MAJOR_VERSION}`;
    throw new DecodeError("header.major_version", "unsupported-version", detail);
  }
  const { maxMinorVersion } = options;
  if (maxMinorVersion !== undefined && header.minorVersion > maxMinorVersion) {
    const detail = `minor version ${header.minorVersion} is newer than the agreed ${maxMinorVersion}`;
    throw new DecodeError("header.minor_version", "unsupported-version", detail);
  }
  if (header.kind !== kind) {
    const detail = `this is a ${kindName(header.kind)} payload, not a ${kindName(kind)} payload`;
    throw new DecodeError("header.kind", "wrong-payload-kind", detail);
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
