import { PayloadKind, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import type { Entry } from "../gen/ts/colocated/v1/table";
import {
  decodeSpecs,
  NamedSharding,
  type PyTreeDef,
  SCHEMA_MAJOR_VERSION,
  SCHEMA_MINOR_VERSION,
  type ShapeDtypeStruct,
  type Specs,
} from "../src/index";
import { arraySpecEntry, meshEntry, namedShardingEntry } from "../src/lower/entries";
import { lowerTreeDef } from "../src/lower/treedef";

/**
 * (d1), the per-spec protobuf: the same specs with every shared object inlined. Each leaf gets
 * its own DeviceList (plain ids), Mesh, NamedSharding and ArraySpec entries and shares nothing,
 * as IFRT's ArraySpecProto carries a full sharding and device list per spec. It is written as a
 * SpecsPayload whose table has four entries per leaf, so the project's own decoder validates
 * and lifts it: that is its decode time.
 */
export function encodeInlined(treedef: PyTreeDef, leaves: readonly ShapeDtypeStruct[]): Uint8Array {
  const entries: Entry[] = [];
  const refs = leaves.map((leaf, i) => {
    const path = `leaves[${i}]`;
    const sharding = leaf.sharding;
    if (!(sharding instanceof NamedSharding))
      throw new Error(`${path}: the bench builds only NamedShardings`);
    const ids = [...sharding.mesh.devices.ids];
    entries.push({
      kind: { $case: "deviceList", value: { ids: { $case: "plain", value: { ids } } } },
    });
    entries.push(meshEntry(sharding.mesh, entries.length - 1, path));
    entries.push(namedShardingEntry(sharding, entries.length - 1, path));
    entries.push(arraySpecEntry(leaf, entries.length - 1, path));
    return entries.length - 1;
  });
  const header = {
    majorVersion: SCHEMA_MAJOR_VERSION,
    minorVersion: SCHEMA_MINOR_VERSION,
    kind: PayloadKind.PAYLOAD_KIND_SPECS,
  };
  const specs = { treedef: lowerTreeDef(treedef), leaves: refs };
  return SpecsPayload.encode({ header, table: { entries }, specs }).finish();
}

/** Decodes and lifts (d1); its payload may pass the default 64 MiB limit, so the limit is its size. */
export function decodeInlined(bytes: Uint8Array): Specs {
  return decodeSpecs(bytes, { limits: { maxPayloadBytes: Math.max(bytes.length, 1) } });
}
