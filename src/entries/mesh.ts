import {
  AxisType as AxisTypeEnum,
  type Entry,
  type Mesh as MessageType,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError, EncodeError } from "../errors";
import type { DeviceList } from "../model/device-list";
import { type AxisType, Mesh } from "../model/mesh";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import type { Accepts, Checked } from "../table/references";
import { DEVICE_LIST } from "./device-list";
import { capitalized, enumNames, type Suffixes } from "./enum-names";
import { type Problem, raise, refuse } from "./problem";

/** Axis types by name: AXIS_TYPE_EXPLICIT is "Explicit". */
export const AXIS_TYPES = enumNames<
  AxisType,
  Capitalize<Lowercase<Suffixes<typeof AxisTypeEnum, "AXIS_TYPE_">>>
>(AxisTypeEnum, "AXIS_TYPE_", capitalized);

/** What checking a mesh found: its axis types, by name. */
export interface MeshFacts {
  readonly axisTypes: readonly AxisType[];
}

/** A reference to a mesh. */
export const MESH: Accepts<MessageType, MeshFacts> = {
  name: "Mesh",
  accepts: (c): c is Checked<MessageType, MeshFacts> => c.kind === "mesh",
};

/** Each mesh's axes as a key, and its checked axis types, by identity (held weakly). */
const FIELDS = new WeakMap<Mesh, string>();
const CHECKED_TYPES = new WeakMap<Mesh, readonly AxisTypeEnum[]>();

/** A mesh's value: its device list's index, then its axes. */
export function key(mesh: Mesh, ctx: LowerContext): ValueKey {
  const deviceList = ctx.table.add(mesh.devices, () => `${ctx.path}.devices`);
  let fields = FIELDS.get(mesh);
  if (fields === undefined) {
    fields = JSON.stringify([mesh.axisSizes, mesh.axisNames, mesh.axisTypes]);
    FIELDS.set(mesh, fields);
  }
  return [deviceList, fields];
}

/** A Mesh entry on its device list's entry; a mesh lowered before is not checked again. */
export function lower(mesh: Mesh, ctx: LowerContext): Entry {
  const { path } = ctx;
  const deviceList = ctx.table.add(mesh.devices, `${path}.devices`);
  const { axisSizes, axisNames } = mesh;
  let axisTypes = CHECKED_TYPES.get(mesh);
  if (!axisTypes) {
    refuse(path, meshProblem(axisSizes, axisNames, mesh.axisTypes.length, mesh.devices.size));
    axisTypes = mesh.axisTypes.map((t, i) => {
      const value = AXIS_TYPES.value(t);
      if (value === undefined)
        throw new EncodeError(`${path}.axisTypes[${i}]`, `unknown value "${t}"`);
      return value;
    });
    CHECKED_TYPES.set(mesh, axisTypes);
  }
  return {
    kind: {
      $case: "mesh",
      value: {
        deviceList,
        axisSizes: [...axisSizes],
        axisNames: [...axisNames],
        axisTypes: [...axisTypes],
      },
    },
  };
}

/** Checks a Mesh message against its device list, in field order. */
export function check(message: MessageType, ctx: CheckContext): MeshFacts {
  const { path, refs, index, limits } = ctx;
  const devices = refs.require(message.deviceList, index, `${path}.device_list`, DEVICE_LIST);
  if (message.axisSizes.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.axis_sizes`,
      "limit-exceeded",
      `${message.axisSizes.length} axes pass the limit of ${limits.maxRank}`,
    );
  }
  const axisTypes = message.axisTypes.map((t, i) => {
    const name = AXIS_TYPES.name(t);
    if (name === undefined)
      throw new DecodeError(`${path}.axis_types[${i}]`, "unknown-enum", `unknown axis type ${t}`);
    return name;
  });
  const deviceCount = devices.facts.size;
  raise(path, meshProblem(message.axisSizes, message.axisNames, axisTypes.length, deviceCount));
  return { axisTypes };
}

/** A checked mesh, on its lifted device list. */
export function lift(message: MessageType, ctx: LiftContext<MeshFacts>): Mesh {
  const devices = ctx.objects[message.deviceList as number] as DeviceList;
  return new Mesh(devices, message.axisSizes, message.axisNames, ctx.facts.axisTypes);
}

/** Checks a mesh's axes against its device count: counts, names, then sizes. */
export function meshProblem(
  axisSizes: readonly number[],
  axisNames: readonly string[],
  axisTypeCount: number,
  deviceCount: number,
): Problem | undefined {
  if (axisNames.length !== axisSizes.length || axisTypeCount !== axisSizes.length) {
    const counts = `${axisSizes.length} sizes, ${axisNames.length} names, ${axisTypeCount} types`;
    return { code: "invalid-mesh", detail: `axis counts disagree: ${counts}` };
  }
  const seen = new Set<string>();
  for (const [k, name] of axisNames.entries()) {
    const at = `.axis_names[${k}]`;
    if (name === "") return { code: "invalid-value", detail: "an axis name is empty", at };
    if (seen.has(name)) return { code: "invalid-mesh", detail: `axis name "${name}" repeats`, at };
    seen.add(name);
  }
  const product = axisSizes.reduce((a, b) => a * b, 1);
  const at = ".axis_sizes";
  if (product !== deviceCount) {
    const shape = axisSizes.join("x") || "()";
    const detail = `axis sizes ${shape} hold ${product} devices, but the device list has ${deviceCount}`;
    return { code: "invalid-mesh", detail, at };
  }
  // JAX aborts the process on a sharding over an empty mesh.
  if (product === 0) return { code: "invalid-mesh", detail: "a mesh holds no devices", at };
  return undefined;
}
