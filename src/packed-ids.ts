import type { DescField } from "@bufbuild/protobuf";
import { DeltaDeviceIdsSchema, PlainDeviceIdsSchema } from "../gen/es/colocated/v1/table_pb";

/**
 * Device ids read straight from the payload's bytes into a typed array. The generated decoder
 * reads a packed id list one value and one `push` at a time, which cost more than all the rest
 * of decoding a shuffled mesh; the wire scan already walks those bytes, so it notes where each
 * list lies, this module reads it in one tight loop, and the decoder's reader steps over it.
 */

/** The id form of each packed field read this way. */
export const PACKED_ID_FIELDS: ReadonlyMap<DescField, IdForm> = new Map([
  [PlainDeviceIdsSchema.field.ids, "plain"],
  [DeltaDeviceIdsSchema.field.deltas, "delta"],
]);

/** Shorter lists are left to the generated decoder, which reads a few values as fast. */
const READ_AHEAD_MIN = 256;

/** plain: uint32 ids; delta: sint32 differences. */
export type IdForm = "plain" | "delta";

/** Where the wire scan met one packed id list: in table entry `entry`, its length at `lengthAt`. */
export interface PackedRecord {
  /** The table entry holding it; -1 outside the table. */
  readonly entry: number;
  readonly form: IdForm;
  /** Where the record's length varint starts, and where its values end. */
  readonly lengthAt: number;
  readonly from: number;
  readonly to: number;
  /** How many values it holds, as the scan counted them. */
  readonly count: number;
  /** Whether the record holds the whole list: packed, and no byte-identical copies follow. */
  readonly whole: boolean;
}

/** A list read ahead: its values as the generated decoder would give them, and its bytes. */
export interface PackedIds {
  readonly form: IdForm;
  /** plain: the ids' uint32 bits (read them with `>>> 0`); delta: the differences. */
  readonly values: Int32Array;
  readonly lengthAt: number;
  readonly to: number;
}

/**
 * The lists that can be read ahead, by table entry: an entry's only id record, whose every
 * value is a varint of at most 5 bytes (anything else is left to the generated decoder, which
 * then reads it, and refuses it, as it always did).
 */
export function readPackedIds(
  bytes: Uint8Array,
  records: readonly PackedRecord[],
): Map<number, PackedIds> {
  const read = new Map<number, PackedIds>();
  if (records.length === 0) return read;
  const counts = new Map<number, number>();
  for (const r of records) counts.set(r.entry, (counts.get(r.entry) ?? 0) + (r.whole ? 1 : 2));
  for (const r of records) {
    if (r.entry < 0 || r.count < READ_AHEAD_MIN || counts.get(r.entry) !== 1) continue;
    const values = readVarints(bytes, r.from, r.to, r.count, r.form === "delta");
    if (values) read.set(r.entry, { form: r.form, values, lengthAt: r.lengthAt, to: r.to });
  }
  return read;
}

/**
 * The varints in bytes[from, to) as BinaryReader's uint32() reads them (the fifth byte's low
 * 4 bits; their 32 bits are kept), zigzag-decoded as its sint32() for `zigzag`; undefined if
 * one is longer than 5 bytes. The scan has counted `count` of them and checked the last is
 * complete.
 */
function readVarints(
  bytes: Uint8Array,
  from: number,
  to: number,
  count: number,
  zigzag: boolean,
): Int32Array | undefined {
  const out = new Int32Array(count);
  for (let i = from, k = 0; i < to; k++) {
    let v = 0;
    let read = false;
    if (i + 3 <= to) {
      // Shuffled ids mix 1-, 2- and 3-byte varints at random, so a branch on the length
      // would be mispredicted about once an id: up to 3 bytes are read with masks instead.
      const b0 = bytes[i];
      const b1 = bytes[i + 1];
      const b2 = bytes[i + 2];
      const more0 = b0 >>> 7; // 1 when a second byte follows
      const more1 = more0 & (b1 >>> 7);
      read = !(more1 & (b2 >>> 7));
      v = (b0 & 0x7f) | (-more0 & ((b1 & 0x7f) << 7)) | (-more1 & ((b2 & 0x7f) << 14));
      if (read) i += 1 + more0 + more1;
    }
    if (!read) {
      let b = bytes[i++];
      v = b & 0x7f;
      for (let shift = 7; b >= 0x80; shift += 7) {
        if (shift > 28) return undefined; // longer than 5 bytes
        b = bytes[i++];
        v |= shift < 28 ? (b & 0x7f) << shift : (b & 0x0f) << 28;
      }
    }
    out[k] = zigzag ? (v >>> 1) ^ -(v & 1) : v;
  }
  return out;
}
