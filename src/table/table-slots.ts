import type { Entry } from "../../gen/ts/colocated/v1/table";
import { codecOf, type EntryCodec } from "../entries";
import type { SharedObject } from "../model/program";
import { ValueObject } from "../model/value-key";
import { entryOrigin } from "../provenance";
import { SCHEMA_MINOR_VERSION } from "../version";
import type { LowerContext } from "./lower-table";

/**
 * Table slots: one small record per distinct value, shared by every equal object, where the
 * table that last took the value in notes the entry it got. A value is keyed by its kind, the
 * slots of what it refers to and its own fields, once per object and process; a table then
 * finds a value it has met, through any equal object, at the cost of two reads. So the specs a
 * program sends on every call, and a sharding made afresh for every leaf, are keyed once, not
 * once per encode. Slots hold no object alive; the shared ones are bounded (MAX_SHARED_SLOTS), and an
 * object resolved after they were dropped gets a new slot, which the table then keys again. An
 * object decoded with unknown fields has a slot of its own (its entry carries them), and so has
 * every value that refers to it.
 */

/** Where tables note a value's entry: the last table's serial number and the entry there. */
export interface TableSlot {
  /** The slot's own number, by which the values that refer to this one are keyed. */
  readonly id: number;
  serial: number;
  entry: number;
  /**
   * The value's entry as last lowered: the same for the same scope (the index of the entry it
   * refers to; a slot's value fixes what that entry holds) and target. Settled: never changed.
   */
  lowered?: { readonly scope: number; readonly target: number; readonly entry: Entry };
}

/**
 * The shared slots, by entry kind, then the slot id of what the value refers to (-1 for none),
 * then its own key: maps of maps, so a lookup hashes only a key its object keeps, no new string.
 */
const SHARED = new Map<EntryCodec, Map<number, Map<string, TableSlot>>>();
let sharedCount = 0;
/** The most shared slots kept: past it they are dropped and made again as values come. */
export const MAX_SHARED_SLOTS = 1 << 16;
let slots = 0;

/** What an entry module's `key` refers to, as slot ids instead of table indices. */
const KEYING: LowerContext = {
  path: "",
  targetMinorVersion: SCHEMA_MINOR_VERSION,
  table: { add: (object: SharedObject) => slotId(object), entries: [] },
};

/** The slot of an object, resolved once: shared by equal objects, or its own if it has no entry kind. */
export function tableSlot(object: ValueObject): TableSlot {
  let slot = object.tableSlot;
  if (slot === undefined) {
    slot = resolve(object);
    object.tableSlot = slot;
  }
  return slot;
}

function slotId(object: SharedObject): number {
  return object instanceof ValueObject ? tableSlot(object).id : newSlot().id;
}

/** An object's shared slot, or a slot of its own if it cannot be keyed here (the table says why). */
function resolve(object: ValueObject): TableSlot {
  const codec = codecOf(object as SharedObject);
  // An object decoded with unknown fields writes them in its entry: its value is not all it is.
  if (codec === undefined || entryOrigin(object as SharedObject)) return newSlot();
  let scope: number;
  let key: string;
  try {
    [scope, key] = codec.key(object as never, KEYING);
  } catch {
    return newSlot(); // lowering it will throw, with its path
  }
  let byScope = SHARED.get(codec);
  if (byScope === undefined) {
    byScope = new Map();
    SHARED.set(codec, byScope);
  }
  let byKey = byScope.get(scope);
  if (byKey === undefined) {
    byKey = new Map();
    byScope.set(scope, byKey);
  }
  let slot = byKey.get(key);
  if (slot === undefined) {
    slot = newSlot();
    if (sharedCount >= MAX_SHARED_SLOTS) {
      SHARED.clear();
      sharedCount = 0;
    }
    // (After a clear, byKey is no longer reachable from SHARED: this slot is simply not shared.)
    byKey.set(key, slot);
    sharedCount++;
  }
  return slot;
}

function newSlot(): TableSlot {
  return { id: ++slots, serial: 0, entry: -1, lowered: undefined };
}
