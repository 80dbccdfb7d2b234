import { DecodeError } from "./errors";
import type { DecodeLimits } from "./limits";
import { type MessageName, WIRE_SCHEMA, type WireField } from "./validate/wire-schema";

/**
 * Scans payload bytes against the schema before any message is built, so that nothing is
 * allocated for what the limits refuse: every repeated field's count is checked against its
 * limit (table entries, tree nodes, device ids, ranks) and unknown fields against theirs.
 * The scan is also the one judge of the wire format, for both languages alike (Python's
 * runtime is strict where ts-proto's is lenient): a field number of 0, a stray end-group, a
 * length past its message, a cut varint, or a singular field given twice is `malformed`.
 * python/colocated_wire/wire_scan.py is the same scan.
 */
export function checkWire(bytes: Uint8Array, root: MessageName, limits: DecodeLimits): number {
  const scan = new WireScan(bytes, limits);
  scan.message(root, bytes.length, undefined);
  return scan.unknownFields;
}

const MAX_GROUP_DEPTH = 32;

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
  #pos = 0;
  #unknown = 0;

  /** How many unknown fields the scan met, fields of a newer minor version. */
  get unknownFields(): number {
    return this.#unknown;
  }

  constructor(
    readonly bytes: Uint8Array,
    readonly limits: DecodeLimits,
  ) {}

  /** Scans one message that ends at `end`. */
  message(type: MessageName, end: number, path: PathLink | undefined): void {
    const fields = WIRE_SCHEMA[type];
    let singular = 0; // a bit per singular field seen (field numbers are below 32)
    let counts: Record<number, number> | undefined; // per repeated field
    while (this.#pos < end) {
      const tag = this.#varint(5, end);
      const number = Math.floor(tag / 8);
      const wireType = tag % 8;
      const field: WireField | undefined = fields[number];
      if (!field || !fits(field, wireType)) {
        if (number === 0) malformed("a field number is 0");
        this.#skipUnknown(number, wireType, end, path);
        continue;
      }
      let seen = 0;
      if (field.limit === undefined) {
        if (singular & (1 << number))
          malformed(`${pathOf({ parent: path, name: field.name })} appears twice`);
        singular |= 1 << number;
      } else {
        counts ??= {};
        seen = counts[number] ?? 0;
      }
      if (wireType === 0) {
        this.#varint(10, end);
        if (counts && field.limit) counts[number] = this.#count(field, path, seen + 1);
        continue;
      }
      const stop = this.#length(end);
      if (counts && field.limit) {
        const items = field.type === "varint" ? this.#packedCount(stop) : 1;
        counts[number] = this.#count(field, path, seen + items);
      }
      if (typeof field.type === "object") {
        // Table entries are table[i]; other repeated messages name[i].
        const item: PathLink =
          field.limit === undefined
            ? { parent: path, name: field.name }
            : type === "SharedObjectTable"
              ? { parent: path, name: "", index: seen }
              : { parent: path, name: field.name, index: seen };
        this.message(field.type.message, stop, item);
      }
      this.#pos = stop;
    }
    if (this.#pos !== end) malformed("a field runs past the end of its message");
  }

  /** A repeated field's new count, checked against its limit. */
  #count(field: WireField, path: PathLink | undefined, count: number): number {
    const limit = this.limits[field.limit as keyof DecodeLimits];
    if (count > limit) {
      const at = pathOf({ parent: path, name: field.name });
      throw new DecodeError(at, "limit-exceeded", `more than ${limit} values (${field.limit})`);
    }
    return count;
  }

  #skipUnknown(
    number: number,
    wireType: number,
    end: number,
    path: PathLink | undefined,
    depth = 0,
  ): void {
    if (depth === 0 && ++this.#unknown > this.limits.maxUnknownFields) {
      const detail = `more than ${this.limits.maxUnknownFields} unknown fields`;
      throw new DecodeError(pathOf(path) || "payload", "limit-exceeded", detail);
    }
    switch (wireType) {
      case 0:
        this.#varint(10, end);
        return;
      case 1:
        this.#advance(8, end);
        return;
      case 2:
        this.#pos = this.#length(end);
        return;
      case 5:
        this.#advance(4, end);
        return;
      case 3: {
        if (depth >= MAX_GROUP_DEPTH) malformed("groups nest too deep");
        for (;;) {
          const tag = this.#varint(5, end);
          if (tag % 8 === 4) {
            if (Math.floor(tag / 8) !== number) malformed("a group ends with another field's tag");
            return;
          }
          if (Math.floor(tag / 8) === 0) malformed("a field number is 0");
          this.#skipUnknown(Math.floor(tag / 8), tag % 8, end, path, depth + 1);
        }
      }
      default:
        malformed(`wire type ${wireType} where no group is open`);
    }
  }

  /** Reads a varint of at most `maxBytes` bytes within `end`; values past 2^53 lose precision. */
  #varint(maxBytes: number, end: number): number {
    let value = 0;
    for (let i = 0, scale = 1; i < maxBytes; i++, scale *= 128) {
      if (this.#pos >= end) malformed("a varint is cut off");
      const byte = this.bytes[this.#pos++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (maxBytes === 5 && value > 0xffffffff) malformed("a tag passes 32 bits");
        return value;
      }
    }
    return malformed("a varint is too long");
  }

  /** Reads a length and returns where its bytes end, which is within `end`. */
  #length(end: number): number {
    const length = this.#varint(10, end);
    if (length > end - this.#pos) malformed("a length runs past the end of its message");
    return this.#pos + length;
  }

  #advance(count: number, end: number): void {
    if (count > end - this.#pos) malformed("a fixed-width value is cut off");
    this.#pos += count;
  }

  /** The number of varints packed up to `stop`, which must end with a complete one. */
  #packedCount(stop: number): number {
    if (stop > this.#pos && this.bytes[stop - 1] >= 0x80) malformed("a packed varint is cut off");
    let count = 0;
    for (let i = this.#pos; i < stop; i++) if (this.bytes[i] < 0x80) count++;
    return count;
  }
}

/** Whether a wire type is the one a known field is read with; others make it unknown. */
function fits(field: WireField, wireType: number): boolean {
  if (field.type === "varint")
    return wireType === 0 || (wireType === 2 && field.limit !== undefined);
  return wireType === 2;
}

function malformed(detail: string): never {
  throw new DecodeError("payload", "malformed", `not a valid protobuf message (${detail})`);
}
