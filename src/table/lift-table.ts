import { Entry } from "../../gen/ts/colocated/v1/table";
import { ENTRIES } from "../entries";
import type { SharedObject } from "../model/program";
import { UnknownEntry } from "../model/unknown-entry";
import { rememberEntry } from "../provenance";
import { hasUnknownFields } from "../unknown-fields";
import type { Checked } from "./references";

/** What an entry's lift sees: the objects lifted before it, and the facts its check returned. */
export interface LiftContext<F = unknown> {
  /** One model object per entry before this one, shared by every reference. */
  readonly objects: readonly SharedObject[];
  readonly facts: F;
}

/**
 * Lifts a checked table (the entries as checkTable returned them) in index order, each entry by its kind, into one model object per
 * entry. With `carryUnknown` (the payload has fields of a newer minor version), each object
 * that came from an entry holding such fields remembers it, so encoding writes them back.
 */
export function liftTable(checked: readonly Checked[], carryUnknown: boolean): SharedObject[] {
  const objects: SharedObject[] = [];
  for (const { entry, kind, message, facts } of checked) {
    if (kind === undefined) {
      // A kind from a newer minor version: kept byte for byte.
      objects.push(new UnknownEntry(Entry.encode(entry).finish()));
      continue;
    }
    const object = ENTRIES[kind].lift(message as never, { objects, facts });
    if (carryUnknown && hasUnknownFields(entry)) rememberEntry(object, entry);
    objects.push(object);
  }
  return objects;
}
