import { PayloadKind, SpecsPayload } from "../../gen/ts/colocated/v1/payload";
import type { Entry } from "../../gen/ts/colocated/v1/table";
import { codecOf } from "../../src/entries";
import * as treedefCodec from "../../src/entries/treedef";
import {
  DeviceList,
  decodeSpecs,
  NamedSharding,
  type PyTreeDef,
  SCHEMA_MAJOR_VERSION,
  SCHEMA_MINOR_VERSION,
  type ShapeDtypeStruct,
  type SharedObject,
  type Specs,
} from "../../src/index";
import type { LowerTable } from "../../src/table/lower-table";

/**
 * (d1), the per-spec protobuf: the same specs with every shared object inlined. Each leaf gets
 * its own DeviceList (plain ids), Mesh, NamedSharding and ArraySpec entries and shares nothing,
 * as IFRT's ArraySpecProto carries a full sharding and device list per spec. It is written as a
 * SpecsPayload whose table has four entries per leaf, so the project's own decoder validates
 * and lifts it: that is its decode time.
 */
export function encodeInlined(treedef: PyTreeDef, leaves: readonly ShapeDtypeStruct[]): Uint8Array {
  const table = new InliningTable();
  const refs = leaves.map((leaf, i) => {
    const path = `leaves[${i}]`;
    if (!(leaf.sharding instanceof NamedSharding))
      throw new Error(`${path}: the bench builds only NamedShardings`);
    return table.add(leaf, path);
  });
  const header = {
    majorVersion: SCHEMA_MAJOR_VERSION,
    minorVersion: SCHEMA_MINOR_VERSION,
    kind: PayloadKind.PAYLOAD_KIND_SPECS,
  };
  const specs = { treedef: treedefCodec.lower(treedef), leaves: refs, leafCopies: [] };
  return SpecsPayload.encode({ header, table: { entries: table.entries }, specs }).finish();
}

/** A table that shares nothing: every object, and everything it refers to, gets its own entries. */
class InliningTable implements LowerTable {
  readonly entries: Entry[] = [];

  add(object: SharedObject, path: string): number {
    if (object instanceof DeviceList) {
      const ids = [...object.ids];
      return this.#push({
        kind: { $case: "deviceList", value: { ids: { $case: "plain", value: { ids } } } },
      });
    }
    const codec = codecOf(object);
    if (!codec) throw new Error(`${path}: the bench inlines only entry kinds it knows`);
    const ctx = { path, table: this, targetMinorVersion: SCHEMA_MINOR_VERSION };
    return this.#push(codec.lower(object as never, ctx));
  }

  #push(entry: Entry): number {
    this.entries.push(entry);
    return this.entries.length - 1;
  }
}

/** Decodes and lifts (d1); its payload may pass the default 64 MiB limit, so the limit is its size. */
export function decodeInlined(bytes: Uint8Array): Specs {
  return decodeSpecs(bytes, { limits: { maxPayloadBytes: Math.max(bytes.length, 1) } });
}
