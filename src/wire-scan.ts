import { type DescField, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Limit, limit as limitOption } from "../gen/es/colocated/v1/limit_pb";
import { DecodeError } from "./errors";
import { type DecodeLimits, limitName } from "./limits";
import { type IdForm, PACKED_ID_FIELDS, type PackedRecord } from "./packed-ids";

/**
 * Scans payload bytes against the schema before any message is built, so that nothing is
 * allocated for what the limits refuse: every repeated field's count is checked against the
 * limit its `(limit)` option names in proto/colocated/v1 (table entries, tree nodes, device
 * ids, ranks), and unknown fields against theirs. `root` is the payload's message descriptor
 * from gen/es (SpecsPayloadSchema, ...). The scan is also the one judge of the wire format,
 * for both languages alike (Python's runtime is strict where ts-proto's is lenient): a field
 * number of 0, a stray end-group, a length past its message, a cut varint, or a singular
 * field given twice is `malformed`. python/colocated_wire/wire_scan.py is the same scan.
 *
 * Bombs are runs of one record written over and over, so a run of byte-identical records of
 * one repeated or unknown field is scanned once and counted at once, as in wire_scan.py.
 *
 * Given `packedIds`, the scan also notes there where each packed device id list lies
 * (packed-ids.ts), so the decoder can read the lists itself.
 */
export function scanWire(
  bytes: Uint8Array,
  root: DescMessage,
  limits: DecodeLimits,
  packedIds?: PackedRecord[],
): number {
  const fields = plan(root); // before reading, so a schema without limits is not `malformed`
  const scan = new WireScan(bytes, limits, packedIds);
  try {
    scan.message(fields, undefined);
  } catch (error) {
    // BinaryReader throws RangeError past the end, and Error for a bad tag or varint.
    if (error instanceof DecodeError) throw error;
    if (!(error instanceof RangeError) && (error as Error).constructor !== Error) throw error;
    malformed((error as Error).message);
  }
  return scan.unknownFields;
}

const UNKNOWN_FIELDS = limitName(Limit.MAX_UNKNOWN_FIELDS);

// Read once: the CommonJS build of @bufbuild/protobuf/wire re-exports WireType through a
// getter, a call each time the scan's loop would name a wire type.
const { Varint, LengthDelimited, StartGroup, EndGroup } = WireType;

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
  /** For a repeated field: where its count is kept among the message's counts. */
  slot: number;
  /** For a message field: its type's fields. */
  message: MessageScan | undefined;
  /** For a singular field: its bit in the mask of fields seen. */
  bit: number;
  /** Elements of a repeated message field are `name[i]`, table entries `table[i]`. */
  itemName: string;
  /** Whether its elements are the table's entries. */
  entries: boolean;
  /** For a packed device id list: its form. */
  idForm: IdForm | undefined;
}

/** A message's fields, indexed by number (an array, not a Map: numbers are small). */
interface MessageScan {
  fields: (FieldScan | undefined)[];
  /** How many of them are repeated. */
  repeated: number;
}

const plans = new WeakMap<DescMessage, MessageScan>();

/** The fields of `type` and of every message it holds, by number. */
function plan(type: DescMessage): MessageScan {
  let scan = plans.get(type);
  if (scan) return scan;
  scan = { fields: [], repeated: 0 };
  plans.set(type, scan); // before its fields, for recursive types
  let singular = 0;
  for (const field of type.fields) {
    const repeated = field.fieldKind === "list";
    scan.fields[field.number] = {
      name: field.name,
      wireType: wireTypeOf(field),
      packedWidth: repeated ? packedWidth(field) : undefined,
      limit: repeated ? limitOf(field) : undefined,
      slot: repeated ? scan.repeated++ : -1,
      message: field.message ? plan(field.message) : undefined,
      bit: repeated ? 0 : 2 ** singular++,
      itemName: type.typeName === "colocated.v1.SharedObjectTable" ? "" : field.name,
      entries: type.typeName === "colocated.v1.SharedObjectTable" && field.name === "entries",
      idForm: PACKED_ID_FIELDS.get(field),
    };
  }
  if (singular > 31)
    throw new Error(`${type.typeName} has more singular fields than the scan tracks`);
  return scan;
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

/**
 * The one reader that walks the whole payload. A nested message is scanned by narrowing `len`
 * to its end and widening it again after, so that no reader or subarray is made per message.
 */
class ScanReader extends BinaryReader {
  declare len: number; // writable, unlike BinaryReader's
}

/** The payload's bytes, with memcmp when Node's Buffer gives one (a browser has none). */
interface ScanBytes extends Uint8Array {
  compare?(target: Uint8Array, start: number, end: number, from: number, to: number): number;
}

/** Node's Buffer, looked up rather than imported, so the scan runs in a browser too. */
const NodeBuffer = (
  globalThis as { Buffer?: { from(b: ArrayBufferLike, o: number, l: number): ScanBytes } }
).Buffer;

/** One scan of one payload: its reader, and the unknown fields met so far. */
class WireScan {
  readonly #reader: ScanReader;
  /** The payload as a Buffer where there is one (no copy), for comparing runs at memcmp's speed. */
  readonly #bytes: ScanBytes;
  #unknown = 0;
  /** The table entry being scanned, -1 outside the table. */
  #entry = -1;
  /**
   * Per repeated field of each message being scanned, its count so far (by slot, from the
   * message's base): a stack, so no array is made per message.
   */
  readonly #counts: number[] = [];
  #top = 0;

  /** How many unknown fields the scan met, fields of a newer minor version. */
  get unknownFields(): number {
    return this.#unknown;
  }

  constructor(
    bytes: Uint8Array,
    readonly limits: DecodeLimits,
    readonly packedIds?: PackedRecord[],
  ) {
    this.#reader = new ScanReader(bytes);
    this.#bytes = NodeBuffer?.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) ?? bytes;
  }

  /** Scans one message, from the reader's position to its `len`. */
  message(scan: MessageScan, path: PathLink | undefined): void {
    const reader = this.#reader;
    let singular = 0; // the bits of the singular fields seen
    const counts = this.#counts;
    const base = this.#top;
    this.#top = base + scan.repeated;
    for (let s = base; s < this.#top; s++) counts[s] = 0;
    while (reader.pos < reader.len) {
      const start = reader.pos;
      // tag() returns an array per tag, but V8 makes it cheap: reading the tag with uint32()
      // and checking it by hand measured no faster.
      const [number, wireType] = reader.tag();
      const field = scan.fields[number];
      const packed = wireType === LengthDelimited && field?.packedWidth !== undefined;
      if (!field || (wireType !== field.wireType && !packed)) {
        this.#unknownField(number, wireType, start, path);
      } else if (field.limit === undefined) {
        if (singular & field.bit)
          malformed(`${pathOf({ parent: path, name: field.name })} appears twice`);
        singular |= field.bit;
        this.#singular(field, path);
      } else {
        const slot = base + field.slot;
        counts[slot] = this.#repeated(field, packed, start, counts[slot], path);
      }
    }
    // Not restored on a throw: the scan ends there.
    this.#top = base;
  }

  /** Reads a singular field's value, and scans it if it is a message. */
  #singular(field: FieldScan, path: PathLink | undefined): void {
    const reader = this.#reader;
    if (field.wireType !== LengthDelimited) {
      skipValue(reader, field.wireType);
      return;
    }
    const length = delimited(reader);
    // An empty message holds nothing to check.
    if (field.message && length > 0) {
      this.#nested(field.message, length, { parent: path, name: field.name });
    } else {
      reader.pos += length;
    }
  }

  /**
   * Reads a value of a repeated field, which is `seen` values long so far, and the copies
   * of its record that follow; returns the field's new count.
   */
  #repeated(
    field: FieldScan,
    packed: boolean,
    start: number,
    seen: number,
    path: PathLink | undefined,
  ): number {
    const reader = this.#reader;
    const unknown = this.#unknown;
    let length = 0; // of a delimited value, whose count is checked before it is scanned
    let items = 1;
    const lengthAt = reader.pos;
    if (packed || field.wireType === LengthDelimited) {
      length = delimited(reader);
      if (packed) items = packedCount(this.#bytes, reader.pos, length, field.packedWidth ?? 0);
    } else {
      skipValue(reader, field.wireType);
    }
    let count = this.#count(field, path, seen + items);
    const from = reader.pos;
    if (field.message && length > 0) {
      if (field.entries) this.#entry = seen;
      this.#nested(field.message, length, { parent: path, name: field.itemName, index: seen });
      if (field.entries) this.#entry = -1;
    } else {
      reader.pos += length;
    }
    // Copies of a record with nothing unknown inside would scan as it did, so are only
    // counted; one with unknown fields is not, for their count is checked as they come.
    let copies = 0;
    if (this.#unknown === unknown) {
      copies = this.#skipCopies(start);
      if (copies > 0) count = this.#count(field, path, count + items * copies);
    }
    if (field.idForm && this.packedIds) {
      // An unpacked value or a run of copies is noted as not whole, so its list is left to
      // the generated decoder.
      const whole = packed && copies === 0;
      const to = packed ? from + length : from;
      const { idForm: form } = field;
      this.packedIds.push({ entry: this.#entry, form, lengthAt, from, to, count: items, whole });
    }
    return count;
  }

  /** Scans the message of `length` bytes at the reader's position. */
  #nested(scan: MessageScan, length: number, path: PathLink): void {
    const reader = this.#reader;
    const outer = reader.len;
    reader.len = reader.pos + length;
    this.message(scan, path);
    // Not restored on a throw: the scan ends there, and the reader with it.
    reader.len = outer;
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

  /** Skips an unknown field that began at `start`, and the copies of it that follow. */
  #unknownField(number: number, wireType: WireType, start: number, path?: PathLink): void {
    this.#countUnknown(1, path);
    skipField(this.#reader, number, wireType, MAX_GROUP_DEPTH);
    const copies = this.#skipCopies(start);
    if (copies > 0) this.#countUnknown(copies, path);
  }

  #countUnknown(count: number, path: PathLink | undefined): void {
    this.#unknown += count;
    if (this.#unknown > this.limits[UNKNOWN_FIELDS]) {
      const detail = `more than ${this.limits[UNKNOWN_FIELDS]} unknown fields (${UNKNOWN_FIELDS})`;
      throw new DecodeError(pathOf(path) || "payload", "limit-exceeded", detail);
    }
  }

  /**
   * Skips the byte-identical copies of the record from `start` to the reader's position that
   * follow it back to back within the message, and returns how many there were.
   */
  #skipCopies(start: number): number {
    const reader = this.#reader;
    const bytes = this.#bytes;
    const stop = reader.pos;
    const size = stop - start;
    const end = reader.len;
    // Most records differ from the next in their last byte, looked at first.
    if (stop + size > end || bytes[stop + size - 1] !== bytes[stop - 1]) return 0;
    if (!same(bytes, start, stop, size)) return 0;
    // Copies known from `start`: doubled while as many again follow, then topped up.
    let total = 2;
    while (
      start + 2 * total * size <= end &&
      same(bytes, start, start + total * size, total * size)
    )
      total *= 2;
    for (let step = total / 2; step >= 1; step /= 2) {
      const at = start + total * size;
      if (at + step * size <= end && same(bytes, start, at, step * size)) total += step;
    }
    reader.pos = start + total * size;
    return total - 1;
  }
}

/** Whether bytes[a, a + length) and bytes[b, b + length) are the same. */
function same(bytes: ScanBytes, a: number, b: number, length: number): boolean {
  if (length <= 32 || !bytes.compare) {
    for (let i = 0; i < length; i++) if (bytes[a + i] !== bytes[b + i]) return false;
    return true;
  }
  return bytes.compare(bytes, b, b + length, a, a + length) === 0;
}

/** Skips a field of any wire type; groups may nest `groups` deep. */
function skipField(reader: BinaryReader, number: number, wireType: WireType, groups: number) {
  if (wireType === LengthDelimited) {
    const length = delimited(reader); // before `pos` is read, which delimited() moves
    reader.pos += length;
  } else if (wireType === StartGroup) {
    if (groups === 0) malformed("groups nest too deep");
    for (;;) {
      const [inner, type] = reader.tag();
      if (type === EndGroup) {
        if (inner !== number) malformed("a group ends with another field's tag");
        return;
      }
      skipField(reader, inner, type, groups - 1);
    }
  } else if (wireType === EndGroup) {
    malformed("an end-group where no group is open");
  } else {
    skipValue(reader, wireType);
  }
}

/** Skips a varint or a fixed-width value. */
function skipValue(reader: BinaryReader, wireType: WireType): void {
  // uint32() refuses a varint of more than 10 bytes, which skip() would pass.
  if (wireType === Varint) reader.uint32();
  else reader.skip(wireType);
}

/** Reads a length, which must lie within the reader, and leaves the reader at its bytes. */
function delimited(reader: BinaryReader): number {
  const start = reader.pos;
  let length = reader.uint32();
  // uint32() keeps the low 32 bits only: a longer length is read again in full.
  if (reader.pos - start > 4) {
    reader.pos = start;
    length = Number(reader.uint64());
  }
  if (length > reader.len - reader.pos) malformed("a length runs past the end of its message");
  return length;
}

/** The number of values packed in bytes[from, from + length), which must end with a complete one. */
function packedCount(bytes: Uint8Array, from: number, length: number, width: number): number {
  if (width > 0) {
    if (length % width !== 0) malformed("a packed value is cut off");
    return length / width;
  }
  const to = from + length;
  if (length > 0 && bytes[to - 1] >= 0x80) malformed("a packed varint is cut off");
  let count = 0;
  // Branch-free: a shuffled id list mixes 2- and 3-byte varints, which a branch mispredicts.
  for (let i = from; i < to; i++) count += (bytes[i] >>> 7) ^ 1;
  return count;
}

function malformed(detail: string): never {
  throw new DecodeError("payload", "malformed", `not a valid protobuf message (${detail})`);
}
