import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { PayloadKindName } from "../payload/header";

/** Where a payload's bytes go, each top-level part's field with its tag and length counted. */
export interface SectionBytes {
  header: number;
  table: number;
  tree: number;
  leaves: number;
  function: number;
  /** The program's device list reference, and fields of a newer schema. */
  other: number;
}

/**
 * The field numbers of the payload messages (payload.proto), by payload kind, with the fields
 * of the leaves inside a tree's message: a Specs' `leaves` (2) and `leaf_copies` (3, 1.3), a
 * Value's `leaves` (2); the rest of the message (its treedef) is the tree's.
 */
const FIELDS = {
  specs: { header: 1, table: 2, specs: [3], leaves: [2, 3], function: -1 },
  program: { header: 1, table: 2, specs: [4, 5], leaves: [2, 3], function: 3 },
  value: { header: 1, table: 2, specs: [3], leaves: [2], function: -1 },
} as const;

/** Splits a payload's bytes by section; walks the wire only, so it works on a payload that fails to decode. */
export function sectionBytes(bytes: Uint8Array, kind: PayloadKindName): SectionBytes {
  const fields = FIELDS[kind];
  const out: SectionBytes = { header: 0, table: 0, tree: 0, leaves: 0, function: 0, other: 0 };
  walk(bytes, (field, size, body) => {
    if (field === fields.header) out.header += size;
    else if (field === fields.table) out.table += size;
    else if (field === fields.function) out.function += size;
    else if ((fields.specs as readonly number[]).includes(field) && body) {
      // The specs' own tag and length count as tree bytes.
      out.tree += size - body.length;
      walk(body, (inner, innerSize) => {
        if ((fields.leaves as readonly number[]).includes(inner)) out.leaves += innerSize;
        else out.tree += innerSize;
      });
    } else out.other += size;
  });
  return out;
}

/** Calls `visit` for every field: its number, its size on the wire, and a length-delimited body. */
function walk(
  bytes: Uint8Array,
  visit: (field: number, size: number, body?: Uint8Array) => void,
): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [field, wireType] = reader.tag();
    let body: Uint8Array | undefined;
    if (wireType === WireType.LengthDelimited) body = reader.bytes();
    else reader.skip(wireType, field);
    visit(field, reader.pos - start, body);
  }
}
