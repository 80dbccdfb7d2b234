import type { DescMessage } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import {
  PayloadEnvelopeSchema,
  PayloadKindSchema,
  ProgramPayloadSchema,
  SpecsPayloadSchema,
  ValuePayloadSchema,
} from "../../gen/es/colocated/v1/payload_pb";
import { type Header, PayloadEnvelope, PayloadKind } from "../../gen/ts/colocated/v1/payload";
import { enumNames, lowercase, type Suffixes } from "../entries/enum-names";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type PackedIds, type PackedRecord, readPackedIds } from "../packed-ids";
import { requireVersion, valueSince, versionName } from "../schema-version";
import { SCHEMA_MAJOR_VERSION } from "../version";
import { scanWire } from "../wire-scan";
import * as writer from "./writer";

/** A payload kind by name: PAYLOAD_KIND_VALUE is "value". */
export type PayloadKindName = Lowercase<Suffixes<typeof PayloadKind, "PAYLOAD_KIND_">>;

/** Payload kinds by name, derived from the generated enum. */
export const PAYLOAD_KINDS = enumNames<PayloadKindName, PayloadKindName>(
  PayloadKind,
  "PAYLOAD_KIND_",
  lowercase,
);

/** The message each payload kind's bytes hold, as the wire scan walks it. */
const SCHEMAS: Readonly<Record<PayloadKindName, DescMessage>> = {
  specs: SpecsPayloadSchema,
  program: ProgramPayloadSchema,
  value: ValuePayloadSchema,
};

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
  scanWire(bytes, PayloadEnvelopeSchema, options.limits);
  checkHeader(parse(PayloadEnvelope, bytes).header, kind, options);
  const records: PackedRecord[] = [];
  const schema = SCHEMAS[PAYLOAD_KINDS.name(kind) as PayloadKindName];
  const unknownFields = scanWire(bytes, schema, options.limits, records);
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
  // A kind newer than the version at hand is named with the version it needs.
  const since = valueSince(PayloadKindSchema, header.kind);
  const what = `a ${kindName(header.kind)} payload`;
  requireVersion("header.kind", what, since, header.minorVersion);
  if (maxMinorVersion !== undefined && since > maxMinorVersion) {
    const detail = `${what} needs ${versionName(since)}; the agreed version is 1.${maxMinorVersion}`;
    throw new DecodeError("header.kind", "unsupported-version", detail);
  }
  if (maxMinorVersion !== undefined && header.minorVersion > maxMinorVersion) {
    const detail = `minor version ${header.minorVersion} is newer than the agreed ${maxMinorVersion}`;
    throw new DecodeError("header.minor_version", "unsupported-version", detail);
  }
  writer.check(header);
  if (header.kind !== kind) {
    const detail = `this is a ${kindName(header.kind)} payload, not a ${kindName(kind)} payload`;
    throw new DecodeError("header.kind", "wrong-payload-kind", detail);
  }
}

function kindName(kind: PayloadKind): string {
  return PAYLOAD_KINDS.name(kind) ?? `kind-${kind}`;
}

/** Which payload message some bytes hold, read from their header alone (nothing is checked). */
export function payloadKindOf(bytes: Uint8Array): PayloadKindName {
  let kind: PayloadKind | undefined;
  try {
    kind = PayloadEnvelope.decode(bytes).header?.kind;
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
  const name = kind === undefined ? undefined : PAYLOAD_KINDS.name(kind);
  if (name) return name;
  const detail = `not a known payload kind (${kind ?? "no header"})`;
  throw new DecodeError("header.kind", "wrong-payload-kind", detail);
}
