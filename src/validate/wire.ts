import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type MessageName, WIRE_SCHEMA, type WireField } from "./wire-schema";

/**
 * Scans payload bytes against the schema before any message is built, so that nothing is
 * allocated for what the limits refuse: every repeated field's count is checked against its
 * limit (table entries, tree nodes, device ids, ranks) and unknown fields against theirs.
 * The scan is also the one judge of the wire format, for both languages alike (Python's
 * runtime is strict where ts-proto's is lenient): a field number of 0, a stray end-group, a
 * length past its message, a cut varint, or a singular field given twice is `malformed`.
 * python/colocated_wire/wire.py is the same scan.
 */
export function checkWire(bytes: Uint8Array, root: MessageName, limits: DecodeLimits): void {
  new WireScan(bytes, limits).message(root, bytes.length, "");
}

const MAX_GROUP_DEPTH = 32;

class WireScan {
  #pos = 0;
  #unknown = 0;

  constructor(
    readonly bytes: Uint8Array,
    readonly limits: DecodeLimits,
  ) {}

  /** Scans one message that ends at `end`, at `path` ("" for the payload). */
  message(type: MessageName, end: number, path: string): void {
    const fields = WIRE_SCHEMA[type];
    const counts = new Map<number, number>();
    while (this.#pos < end) {
      const tag = this.#varint(5, end);
      const number = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (number === 0) malformed("a field number is 0");
      const field: WireField | undefined = fields[number];
      if (!field || !fits(field, wireType)) {
        this.#skipUnknown(number, wireType, end, path);
        continue;
      }
      const at = path ? `${path}.${field.name}` : field.name;
      const seen = counts.get(number) ?? 0;
      if (!field.limit && seen > 0) malformed(`${at} appears twice`);
      if (wireType === 0) {
        this.#varint(10, end);
        counts.set(number, this.#count(field, at, seen, 1));
        continue;
      }
      const stop = this.#length(end);
      if (typeof field.type === "object") {
        const item =
          type === "SharedObjectTable" ? `${path}[${seen}]` : field.limit ? `${at}[${seen}]` : at;
        counts.set(number, this.#count(field, at, seen, 1));
        this.message(field.type.message, stop, item);
      } else {
        const items = field.type === "varint" ? this.#packedCount(stop) : 1;
        counts.set(number, this.#count(field, at, seen, items));
      }
      this.#pos = stop;
    }
    if (this.#pos !== end) malformed("a field runs past the end of its message");
  }

  /** Adds `items` to a field's count, checked against its limit. */
  #count(field: WireField, at: string, seen: number, items: number): number {
    const count = seen + items;
    if (field.limit && count > this.limits[field.limit]) {
      const detail = `more than ${this.limits[field.limit]} values pass the limit ${field.limit}`;
      throw new DecodeError(at, "limit-exceeded", detail);
    }
    return count;
  }

  #skipUnknown(number: number, wireType: number, end: number, path: string, depth = 0): void {
    if (depth === 0 && ++this.#unknown > this.limits.maxUnknownFields) {
      const detail = `more than ${this.limits.maxUnknownFields} unknown fields`;
      throw new DecodeError(path || "payload", "limit-exceeded", detail);
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
    let count = 0;
    for (let i = this.#pos; i < stop; i++) if (this.bytes[i] < 0x80) count++;
    if (stop > this.#pos && this.bytes[stop - 1] >= 0x80) malformed("a packed varint is cut off");
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
