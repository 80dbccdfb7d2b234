import { DeviceList } from "../model/device-list";
import { Mesh } from "../model/mesh";
import type { SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "../model/sharding";
import { UnknownEntry } from "../model/unknown-entry";
import type { Accepts } from "./reference";

/** What each reference field accepts. Only fields that may point at newer kinds accept UnknownEntry. */
export const ACCEPTS = {
  deviceList: { name: "DeviceList", test: (o): o is DeviceList => o instanceof DeviceList },
  mesh: { name: "Mesh", test: (o): o is Mesh => o instanceof Mesh },
  arraySpec: {
    name: "ArraySpec",
    test: (o): o is ShapeDtypeStruct => o instanceof ShapeDtypeStruct,
  },
  sharding: {
    name: "sharding",
    test: (o): o is Sharding =>
      o instanceof NamedSharding ||
      o instanceof SingleDeviceSharding ||
      o instanceof GSPMDSharding ||
      o instanceof UnknownEntry,
  },
  any: { name: "shared object", test: (_o): _o is SharedObject => true },
} satisfies Record<string, Accepts<SharedObject>>;
