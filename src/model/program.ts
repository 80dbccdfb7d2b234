import type { DeviceList } from "./device-list";
import type { Mesh } from "./mesh";
import type { ShapeDtypeStruct } from "./shape-dtype-struct";
import type { GSPMDSharding, NamedSharding, SingleDeviceSharding } from "./sharding";
import type { PyTreeDef } from "./tree";
import type { UnknownEntry } from "./unknown-entry";

/** Anything that lives in the shared-object table. */
export type SharedObject =
  | DeviceList
  | Mesh
  | NamedSharding
  | SingleDeviceSharding
  | GSPMDSharding
  | ShapeDtypeStruct
  | UnknownEntry;

/** A pytree of ShapeDtypeStruct, split into structure and leaves. */
export interface Specs {
  treedef: PyTreeDef;
  leaves: ShapeDtypeStruct[];
}

/** A module-level Python function, found by name on the worker. */
export class FunctionRef {
  constructor(
    readonly module: string,
    readonly qualname: string,
  ) {}
}

/** A cloudpickled Python function; TypeScript keeps the bytes and the shared objects they name. */
export class PickledFunction {
  constructor(
    readonly pickle: Uint8Array,
    /** The pickle's persistent ids, in order: shared objects its closure captured. */
    readonly refs: readonly SharedObject[],
  ) {}
}

/** A function of a kind from a newer minor version, kept as its `Function` message's bytes. */
export class UnknownFunction {
  constructor(readonly bytes: Uint8Array) {}
}

/** What a colocated-Python worker runs: function, specs, and devices. */
export interface Program {
  function: FunctionRef | PickledFunction | UnknownFunction;
  inputs: Specs;
  /** Absent while the output specs are not known yet. */
  outputs?: Specs;
  devices: DeviceList;
}
