import { Entry, type SharedObjectTable } from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { DeviceList } from "../model/device-list";
import { Mesh } from "../model/mesh";
import type { SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { GSPMDSharding, NamedSharding, SingleDeviceSharding } from "../model/sharding";
import { UnknownEntry } from "../model/unknown-entry";
import { rememberEntry } from "../provenance";
import { hasUnknownFields } from "../unknown-fields";
import { checkDeviceList } from "../validate/device-list";
import {
  checkArraySpec,
  checkGspmdSharding,
  checkMesh,
  checkNamedSharding,
  checkSingleDeviceSharding,
  type EntryContext,
} from "../validate/entries";
import { References } from "../validate/reference";

/**
 * Lifts a table in one forward pass: one model object per entry, shared by every reference.
 * With `carryUnknown` (the payload has fields of a newer minor version), each object that
 * came from an entry holding such fields remembers it, so encoding writes them back.
 */
export function liftTable(
  table: SharedObjectTable | undefined,
  limits: DecodeLimits,
  carryUnknown: boolean,
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
  const lifted: SharedObject[] = [];
  const refs = new References(lifted, entries.length);
  entries.forEach((entry, index) => {
    const object = liftEntry(entry, { index, path: `table[${index}]`, refs, limits });
    if (carryUnknown && !(object instanceof UnknownEntry) && hasUnknownFields(entry)) {
      rememberEntry(object, entry);
    }
    lifted.push(object);
  });
  return refs;
}

function liftEntry(entry: Entry, ctx: EntryContext): SharedObject {
  const { path, limits } = ctx;
  const kind = entry.kind;
  switch (kind?.$case) {
    case "deviceList":
      return new DeviceList(checkDeviceList(kind.value, `${path}.device_list`, limits));
    case "mesh": {
      const m = checkMesh(kind.value, { ...ctx, path: `${path}.mesh` });
      return new Mesh(m.devices, m.axisSizes, m.axisNames, m.axisTypes);
    }
    case "namedSharding": {
      const s = checkNamedSharding(kind.value, { ...ctx, path: `${path}.named_sharding` });
      return new NamedSharding(s.mesh, s.spec, { memoryKind: s.memoryKind });
    }
    case "singleDeviceSharding": {
      const s = checkSingleDeviceSharding(kind.value, {
        ...ctx,
        path: `${path}.single_device_sharding`,
      });
      return new SingleDeviceSharding(s.deviceId, { memoryKind: s.memoryKind });
    }
    case "gspmdSharding": {
      const s = checkGspmdSharding(kind.value, { ...ctx, path: `${path}.gspmd_sharding` });
      return new GSPMDSharding(s.devices, s.hloSharding, { memoryKind: s.memoryKind });
    }
    case "arraySpec": {
      const a = checkArraySpec(kind.value, { ...ctx, path: `${path}.array_spec` });
      return new ShapeDtypeStruct(a.shape, a.dtype, a.sharding, { weakType: a.weakType });
    }
    default:
      // A kind from a newer minor version: kept byte for byte.
      return new UnknownEntry(Entry.encode(entry).finish());
  }
}
