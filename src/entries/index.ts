import type { Entry } from "../../gen/ts/colocated/v1/table";
import { DeviceList } from "../model/device-list";
import { Mesh } from "../model/mesh";
import type { SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { GSPMDSharding, NamedSharding, SingleDeviceSharding } from "../model/sharding";
import { UnknownEntry } from "../model/unknown-entry";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import type { EntryKind } from "../table/references";
import * as arraySpec from "./array-spec";
import * as deviceList from "./device-list";
import * as gspmdSharding from "./gspmd-sharding";
import * as mesh from "./mesh";
import * as namedSharding from "./named-sharding";
import * as singleDeviceSharding from "./single-device-sharding";

/** One entry kind's module, as the table pipelines call it. */
export interface EntryCodec<O extends SharedObject = SharedObject, M = never, F = unknown> {
  /** The model class it lowers and lifts. */
  readonly model: abstract new (
    ...args: never[]
  ) => O;
  /** The field of `Entry` that holds it, as paths name it: `named_sharding`. */
  readonly field: string;
  /**
   * Adds the one entry the value refers to, if any, and gives its index (the scope) and the
   * value's own key: equal values have equal keys within a scope.
   */
  key(object: O, ctx: LowerContext): ValueKey;
  /**
   * The value's entry, referring to nothing but its scope's entry: so an entry lowered once is
   * the entry again wherever the scope has the same index (lower-table.ts keeps it).
   */
  lower(object: O, ctx: LowerContext): Entry;
  check(message: M, ctx: CheckContext): F;
  lift(message: M, ctx: LiftContext<F>): O;
}

type Kind = NonNullable<EntryKind>;

/** The entry kinds, by the case of the `Entry.kind` oneof: one line each, its module and model. */
export const ENTRIES = codecs({
  deviceList: [deviceList, DeviceList],
  mesh: [mesh, Mesh],
  namedSharding: [namedSharding, NamedSharding],
  singleDeviceSharding: [singleDeviceSharding, SingleDeviceSharding],
  gspmdSharding: [gspmdSharding, GSPMDSharding],
  arraySpec: [arraySpec, ShapeDtypeStruct],
});

const BY_MODEL = new Map<unknown, EntryCodec>(Object.values(ENTRIES).map((c) => [c.model, c]));

/** The module that lowers an object, by its class (a subclass found by instanceof). */
export function codecOf(object: SharedObject): EntryCodec | undefined {
  const codec = BY_MODEL.get((object as object)?.constructor);
  return codec ?? Object.values(ENTRIES).find((c) => object instanceof c.model);
}

/** The name of an entry kind in messages: its model class, as in "entry 0 is a DeviceList". */
export function kindName(kind: EntryKind): string {
  return kind === undefined ? UnknownEntry.name : ENTRIES[kind].model.name;
}

type MessageOf<K extends Kind> = Extract<NonNullable<Entry["kind"]>, { $case: K }>["value"];

/** An entry module as written: its check and lift take the message of its own case. */
interface Module<K extends Kind> {
  key(object: never, ctx: LowerContext): ValueKey;
  lower(object: never, ctx: LowerContext): Entry;
  check(message: MessageOf<K>, ctx: CheckContext): unknown;
  lift(message: MessageOf<K>, ctx: never): SharedObject;
}

function codecs(kinds: { [K in Kind]: [Module<K>, EntryCodec["model"]] }): {
  readonly [K in Kind]: EntryCodec;
} {
  const entries = Object.entries(kinds).map(([kind, [module, model]]) => {
    const field = kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    return [kind, { ...module, model, field } as unknown as EntryCodec];
  });
  return Object.fromEntries(entries);
}
