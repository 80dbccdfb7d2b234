import { type DescField, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Limit, limit as limitOption } from "../gen/es/colocated/v1/limit_pb";
import { DecodeError } from "./errors";
import { type DecodeLimits, limitName } from "./limits";

/**
 * Scans payload bytes against the schema before any message is built, so that nothing is
 * allocated for what the limits refuse: every repeated field's count is checked against the
 * limit its `(limit)` option names in proto/colocated/v1 (table entries, tree nodes, device
 * ids, ranks), and unknown fields against theirs. `root` is the payload's message descriptor
 * from gen/es (SpecsPayloadSchema, ...). The scan is also the one judge of the wire format,
 * for both languages alike (Python's runtime is strict where ts-proto's is lenient): a field
 * number of 0, a stray end-group, a length past its message, a cut varint, or a singular
 * field given twice is `malformed`. python/colocated_wire/wire_scan.py is the same scan.
 */
export function checkWire(bytes: Uint8Array, root: DescMessage, limits: DecodeLimits): number {
  const fields = plan(root); // before reading, so a schema without limits is not `malformed`
  const scan = new WireScan(limits);
  try {
    scan.message(new BinaryReader(bytes), fields, undefined);
  } catch (error) {
    // BinaryReader throws RangeError past the end, and Error for a bad tag or varint.
    if (error instanceof DecodeError) throw error;
    if (!(error instanceof RangeError) && (error as Error).constructor !== Error) throw error;
    malformed((error as Error).message);
  }
  return scan.unknownFields;
}

const UNKNOWN_FIELDS = limitName(Limit.MAX_UNKNOWN_FIELDS);

/** Unknown groups nest at most this deep. */
const MAX_GROUP_DEPTH = 32;

/** What the scan needs of a field, read once from its descriptor. */
interface FieldScan {
  name: string;
  /** The wire type one value is written with. */
  wireType: WireType;
  /** For a repeated number: bytes per packed value, 0 for varints. */
  packedWidth: number | undefined;
  /** For a repeated field: the limit on its count in one message. */
  limit: keyof DecodeLimits | undefined;
  /** For a message field: its type's fields. */
  message: MessageScan | undefined;
  /** For a singular field: its bit in the mask of fields seen. */
  bit: number;
  /** Elements of a repeated message field are `name[i]`, table entries `table[i]`. */
  itemName: string;
}

type MessageScan = Map<number, FieldScan>;

const plans = new WeakMap<DescMessage, MessageScan>();

/** The fields of `type` and of every message it holds, by number. */
function plan(type: DescMessage): MessageScan {
  let fields = plans.get(type);
  if (fields) return fields;
  fields = new Map();
  plans.set(type, fields); // before its fields, for recursive types
  let singular = 0;
  for (const field of type.fields) {
    const repeated = field.fieldKind === "list";
    fields.set(field.number, {
      name: field.name,
      wireType: wireTypeOf(field),
      packedWidth: repeated ? packedWidth(field) : undefined,
      limit: repeated ? limitOf(field) : undefined,
      message: field.message ? plan(field.message) : undefined,
      bit: repeated ? 0 : 2 ** singular++,
      itemName: type.typeName === "colocated.v1.SharedObjectTable" ? "" : field.name,
    });
  }
  if (singular > 31)
    throw new Error(`${type.typeName} has more singular fields than the scan tracks`);
  return fields;
}

function limitOf(field: DescField): keyof DecodeLimits {
  const limit = getOption(field, limitOption);
  if (limit === Limit.UNSPECIFIED)
    throw new Error(`${field.parent.typeName}.${field.name} has no (limit)`);
  return limitName(limit);
}

function scalarOf(field: DescField): ScalarType | undefined {
  if (field.fieldKind === "scalar") return field.scalar;
  if (field.fieldKind === "list" && field.listKind === "scalar") return field.scalar;
  if (field.fieldKind === "map") throw new Error(`${field.parent.typeName}.${field.name}: no maps`);
  return undefined;
}

/** The wire type of one value of `field`. */
function wireTypeOf(field: DescField): WireType {
  if (field.message) return WireType.LengthDelimited;
  switch (scalarOf(field)) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return WireType.LengthDelimited;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return WireType.Bit32;
    default: // the integers, bools and enums
      return WireType.Varint;
  }
}

function packedWidth(field: DescField): number | undefined {
  switch (wireTypeOf(field)) {
    case WireType.Varint:
      return 0;
    case WireType.Bit64:
      return 8;
    case WireType.Bit32:
      return 4;
    default:
      return undefined;
  }
}

/** Where a message sits, built into a string only for an error. */
interface PathLink {
  parent: PathLink | undefined;
  name: string;
  index?: number;
}

function pathOf(link: PathLink | undefined): string {
  const parts: string[] = [];
  for (let at = link; at; at = at.parent) {
    parts.push(at.index === undefined ? at.name : `${at.name}[${at.index}]`);
  }
  return parts.reverse().join(".").replaceAll(".[", "[");
}

class WireScan {
  #unknown = 0;

  /** How many unknown fields the scan met, fields of a newer minor version. */
  get unknownFields(): number {
    return this.#unknown;
  }

  constructor(readonly limits: DecodeLimits) {}

  /** Scans one message, all that `reader` holds. */
  message(reader: BinaryReader, fields: MessageScan, path: PathLink | undefined): void {
    let singular = 0; // the bits of the singular fields seen
    let counts: Map<number, number> | undefined; // per repeated field
    while (reader.pos < reader.len) {
      const [number, wireType] = reader.tag();
      const field = fields.get(number);
      const packed = wireType === WireType.LengthDelimited && field?.packedWidth !== undefined;
      if (!field || (wireType !== field.wireType && !packed)) {
        this.#skipUnknown(reader, number, wireType, path);
        continue;
      }
      let seen = 0;
      if (field.limit === undefined) {
        if (singular & field.bit)
          malformed(`${pathOf({ parent: path, name: field.name })} appears twice`);
        singular |= field.bit;
      } else {
        counts ??= new Map();
        seen = counts.get(number) ?? 0;
      }
      if (wireType !== WireType.LengthDelimited) {
        skipValue(reader, wireType);
        if (counts && field.limit) counts.set(number, this.#count(field, path, seen + 1));
        continue;
      }
      const body = delimited(reader);
      if (counts && field.limit) {
        const items = packed ? packedCount(body, field.packedWidth ?? 0) : 1;
        counts.set(number, this.#count(field, path, seen + items));
      }
      // An empty message holds nothing to check.
      if (field.message && body.length > 0) {
        const item: PathLink =
          field.limit === undefined
            ? { parent: path, name: field.name }
            : { parent: path, name: field.itemName, index: seen };
        this.message(new BinaryReader(body), field.message, item);
      }
    }
  }

  /** A repeated field's new count, checked against its limit. */
  #count(field: FieldScan, path: PathLink | undefined, count: number): number {
    const limit = this.limits[field.limit as keyof DecodeLimits];
    if (count > limit) {
      const at = pathOf({ parent: path, name: field.name });
      throw new DecodeError(at, "limit-exceeded", `more than ${limit} values (${field.limit})`);
    }
    return count;
  }

  #skipUnknown(reader: BinaryReader, number: number, wireType: WireType, path?: PathLink): void {
    if (++this.#unknown > this.limits[UNKNOWN_FIELDS]) {
      const detail = `more than ${this.limits[UNKNOWN_FIELDS]} unknown fields (${UNKNOWN_FIELDS})`;
      throw new DecodeError(pathOf(path) || "payload", "limit-exceeded", detail);
    }
    skipField(reader, number, wireType, MAX_GROUP_DEPTH);
  }
}

/** Skips a field of any wire type; groups may nest `groups` deep. */
function skipField(reader: BinaryReader, number: number, wireType: WireType, groups: number) {
  if (wireType === WireType.LengthDelimited) {
    delimited(reader);
  } else if (wireType === WireType.StartGroup) {
    if (groups === 0) malformed("groups nest too deep");
    for (;;) {
      const [inner, type] = reader.tag();
      if (type === WireType.EndGroup) {
        if (inner !== number) malformed("a group ends with another field's tag");
        return;
      }
      skipField(reader, inner, type, groups - 1);
    }
  } else if (wireType === WireType.EndGroup) {
    malformed("an end-group where no group is open");
  } else {
    skipValue(reader, wireType);
  }
}

/** Skips a varint or a fixed-width value. */
function skipValue(reader: BinaryReader, wireType: WireType): void {
  // uint32() refuses a varint of more than 10 bytes, which skip() would pass.
  if (wireType === WireType.Varint) reader.uint32();
  else reader.skip(wireType);
}

/** Reads a length and returns the bytes it covers, which lie within the reader. */
function delimited(reader: BinaryReader): Uint8Array {
  const start = reader.pos;
  let length = reader.uint32();
  // uint32() keeps the low 32 bits only: a longer length is read again in full.
  if (reader.pos - start > 4) {
    reader.pos = start;
    length = Number(reader.uint64());
  }
  if (length > reader.len - reader.pos) malformed("a length runs past the end of its message");
  reader.pos = start;
  return reader.bytes();
}

/** The number of values packed in `body`, which must end with a complete one. */
function packedCount(body: Uint8Array, width: number): number {
  if (width > 0) {
    if (body.length % width !== 0) malformed("a packed value is cut off");
    return body.length / width;
  }
  if (body.length > 0 && body[body.length - 1] >= 0x80) malformed("a packed varint is cut off");
  let count = 0;
  for (let i = 0; i < body.length; i++) if (body[i] < 0x80) count++;
  return count;
}

function malformed(detail: string): never {
  throw new DecodeError("payload", "malformed", `not a valid protobuf message (${detail})`);
}
