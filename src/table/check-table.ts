import type { SharedObjectTable } from "../../gen/ts/colocated/v1/table";
import { ENTRIES } from "../entries";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import type { PackedIds } from "../packed-ids";
import { type Checked, References } from "./references";

/** Where an entry's check runs: its index, its path, the entries checked before it, the limits. */
export interface CheckContext {
  /** The entry's index; the table size for a payload part, which may refer to every entry. */
  readonly index: number;
  /** The path of the entry's message, such as `table[3].mesh`. */
  readonly path: string;
  readonly refs: References;
  readonly limits: DecodeLimits;
  /** The payload header's minor version: a construct of a newer one is refused. */
  readonly minorVersion: number;
  /** The entry's packed device ids, when the decoder read them from the bytes (packed-ids.ts). */
  readonly packedIds?: PackedIds;
}

/**
 * Checks a table in index order, each entry by its kind, in one forward pass: an entry may
 * refer only to entries before it, so their checks have run. Entries of a kind from a newer
 * minor version are not checked: they are carried byte for byte.
 */
export function checkTable(
  table: SharedObjectTable | undefined,
  limits: DecodeLimits,
  minorVersion: number,
  packedIds?: ReadonlyMap<number, PackedIds>,
): References {
  if (!table) throw new DecodeError("table", "missing", "a payload needs its table");
  const { entries } = table;
  if (entries.length > limits.maxTableEntries) {
    throw new DecodeError(
      "table.entries",
      "limit-exceeded",
      `${entries.length} entries pass the limit of ${limits.maxTableEntries}`,
    );
  }
  const checked: Checked[] = [];
  const refs = new References(checked, entries.length);
  entries.forEach((entry, index) => {
    const kind = entry.kind;
    if (kind === undefined) {
      checked.push({ entry, kind, message: entry, facts: undefined });
      return;
    }
    const { check, field } = ENTRIES[kind.$case];
    const path = `table[${index}].${field}`;
    const ctx = { index, path, refs, limits, minorVersion, packedIds: packedIds?.get(index) };
    const facts = check(kind.value as never, ctx);
    checked.push({ entry, kind: kind.$case, message: kind.value, facts });
  });
  return refs;
}
