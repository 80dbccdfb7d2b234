import {
  type Entry,
  PartitionSpecEntryKind as EntryKind,
  type NamedSharding as MessageType,
  type PartitionSpecEntry as PartitionSpecEntryMessage,
  type PartitionSpec as PartitionSpecMessage,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError } from "../errors";
import type { AxisType, Mesh } from "../model/mesh";
import { PartitionSpec, type PartitionSpecEntry, UNCONSTRAINED } from "../model/partition-spec";
import { NamedSharding } from "../model/sharding";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import { checkMemoryKind } from "./memory-kind";
import { MESH } from "./mesh";
import { type Problem, raise, refuse } from "./problem";

/**
 * Checked and lowered specs, by mesh (held weakly) and then by the sharding's key: a sharding
 * made afresh for every leaf, as programs do, is checked once per mesh and value.
 */
const LOWERED_SPECS = new WeakMap<Mesh, Map<string, PartitionSpecMessage>>();

/** A NamedSharding's value: its mesh's index, then its memory kind and spec. */
export function key(sharding: NamedSharding, ctx: LowerContext): ValueKey {
  const mesh = ctx.table.add(sharding.mesh, () => `${ctx.path}.mesh`);
  return [mesh, sharding.headKey];
}

/** A NamedSharding entry on its mesh's entry. */
export function lower(sharding: NamedSharding, ctx: LowerContext): Entry {
  const { path } = ctx;
  const mesh = ctx.table.add(sharding.mesh, `${path}.mesh`);
  const { spec, mesh: model } = sharding;
  let byKey = LOWERED_SPECS.get(model);
  if (!byKey) {
    byKey = new Map();
    LOWERED_SPECS.set(model, byKey);
  }
  const own = sharding.headKey;
  let specMessage = byKey.get(own);
  if (!specMessage) {
    const axes = {
      partitions: spec.partitionAxes,
      unreduced: spec.unreduced,
      reduced: spec.reduced,
      unconstrained: spec.entries.includes(UNCONSTRAINED),
    };
    refuse(`${path}.spec`, specAxesProblem(axes, model.axisNames, model.axisTypes));
    specMessage = lowerSpec(spec);
    byKey.set(own, specMessage);
  }
  const memoryKind = sharding.memoryKind ?? undefined;
  // A fresh copy: the entry may be given a newer peer's unknown fields.
  const value = { mesh, spec: copySpec(specMessage), memoryKind };
  return { kind: { $case: "namedSharding", value } };
}

/** Each sharding's own key, by identity (held weakly). */
function copySpec(spec: PartitionSpecMessage): PartitionSpecMessage {
  return {
    entries: spec.entries.map((e) => ({ kind: e.kind, axes: [...e.axes] })),
    unreduced: [...spec.unreduced],
    reduced: [...spec.reduced],
  };
}

/** Checks a NamedSharding message against its mesh's axis names and types. */
export function check(message: MessageType, ctx: CheckContext): undefined {
  const { path, refs, index } = ctx;
  const mesh = refs.require(message.mesh, index, `${path}.mesh`, MESH);
  const spec = message.spec ?? { entries: [], unreduced: [], reduced: [] };
  const rules = new SpecAxisRules(mesh.message.axisNames, mesh.facts.axisTypes);
  checkSpec(spec, `${path}.spec`, rules);
  checkMemoryKind(message.memoryKind, path);
  return undefined;
}

/** A checked NamedSharding, on its lifted mesh. */
export function lift(message: MessageType, ctx: LiftContext): NamedSharding {
  const mesh = ctx.objects[message.mesh as number] as Mesh;
  const spec = liftSpec(message.spec ?? { entries: [], unreduced: [], reduced: [] });
  return new NamedSharding(mesh, spec, { memoryKind: message.memoryKind ?? null });
}

/** Where an axis of a PartitionSpec sits: in an entry, or in the unreduced or reduced set. */
export type AxisRole = "partition" | "unreduced" | "reduced";

/**
 * Checks the axes of one PartitionSpec, one at a time in order, as JAX does: every axis is a
 * mesh axis and used once (entries, unreduced and reduced together), unreduced and reduced
 * axes are Explicit, and UNCONSTRAINED needs an Auto axis.
 */
export class SpecAxisRules {
  readonly #typeOf: Map<string, AxisType>;
  readonly #used = new Set<string>();

  constructor(
    readonly meshAxes: readonly string[],
    readonly meshTypes: readonly AxisType[],
  ) {
    this.#typeOf = new Map(meshAxes.map((name, i) => [name, meshTypes[i]]));
  }

  /** The next axis the spec names. */
  axis(name: string, role: AxisRole): Problem | undefined {
    const type = this.#typeOf.get(name);
    if (type === undefined) {
      const axes = this.meshAxes.join(", ") || "none";
      return {
        code: "unknown-axis",
        detail: `axis "${name}" is not a mesh axis (mesh has ${axes})`,
      };
    }
    if (this.#used.has(name))
      return { code: "repeated-axis", detail: `axis "${name}" is used twice` };
    this.#used.add(name);
    if (role !== "partition" && type !== "Explicit")
      return { code: "invalid-value", detail: `${role} axis "${name}" is ${type}, not Explicit` };
    return undefined;
  }

  /** An UNCONSTRAINED entry. */
  unconstrained(): Problem | undefined {
    if (this.meshTypes.includes("Auto")) return undefined;
    return { code: "invalid-value", detail: "UNCONSTRAINED needs a mesh with an Auto axis" };
  }
}

/** The axes a PartitionSpec uses, by role. */
export interface SpecAxes {
  /** Axis names of the entries, in order. */
  partitions: readonly string[];
  unreduced: readonly string[];
  reduced: readonly string[];
  /** Whether an entry is UNCONSTRAINED. */
  unconstrained: boolean;
}

/** Checks a whole PartitionSpec against its mesh (see SpecAxisRules). */
export function specAxesProblem(
  spec: SpecAxes,
  meshAxes: readonly string[],
  meshTypes: readonly AxisType[],
): Problem | undefined {
  const rules = new SpecAxisRules(meshAxes, meshTypes);
  const roles: [AxisRole, readonly string[]][] = [
    ["partition", spec.partitions],
    ["unreduced", spec.unreduced],
    ["reduced", spec.reduced],
  ];
  for (const [role, axes] of roles) {
    for (const name of axes) {
      const problem = rules.axis(name, role);
      if (problem) return problem;
    }
  }
  return spec.unconstrained ? rules.unconstrained() : undefined;
}

/** Checks each entry (kind, arity, axes), then unreduced and reduced, in order. */
function checkSpec(message: PartitionSpecMessage, path: string, rules: SpecAxisRules): void {
  for (const [i, entry] of message.entries.entries())
    checkSpecEntry(entry, `${path}.entries[${i}]`, rules);
  for (const role of ["unreduced", "reduced"] as const) {
    for (const [k, name] of message[role].entries())
      raise(`${path}.${role}[${k}]`, rules.axis(name, role));
  }
}

/** Checks one PartitionSpec entry: a known kind, its number of axes, then the axes. */
function checkSpecEntry(entry: PartitionSpecEntryMessage, at: string, rules: SpecAxisRules): void {
  const arity = (expected: number) => {
    if (entry.axes.length !== expected) {
      const detail = `expected ${expected} axes, got ${entry.axes.length}`;
      throw new DecodeError(`${at}.axes`, "invalid-value", detail);
    }
  };
  switch (entry.kind) {
    case EntryKind.PARTITION_SPEC_ENTRY_KIND_NONE:
      arity(0);
      return;
    case EntryKind.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
      arity(0);
      raise(at, rules.unconstrained());
      return;
    case EntryKind.PARTITION_SPEC_ENTRY_KIND_AXIS:
      arity(1);
      break;
    case EntryKind.PARTITION_SPEC_ENTRY_KIND_TUPLE:
      break;
    default: {
      const detail = `unknown partition spec entry kind ${entry.kind}`;
      throw new DecodeError(`${at}.kind`, "unknown-enum", detail);
    }
  }
  for (const [k, name] of entry.axes.entries())
    raise(`${at}.axes[${k}]`, rules.axis(name, "partition"));
}

function lowerSpec(spec: PartitionSpec): PartitionSpecMessage {
  const entries = spec.entries.map((e) => {
    if (e === null) return { kind: EntryKind.PARTITION_SPEC_ENTRY_KIND_NONE, axes: [] };
    if (e === UNCONSTRAINED)
      return { kind: EntryKind.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED, axes: [] };
    if (typeof e === "string") return { kind: EntryKind.PARTITION_SPEC_ENTRY_KIND_AXIS, axes: [e] };
    return { kind: EntryKind.PARTITION_SPEC_ENTRY_KIND_TUPLE, axes: [...(e as string[])] };
  });
  return { entries, unreduced: [...spec.unreduced], reduced: [...spec.reduced] };
}

function liftSpec(message: PartitionSpecMessage): PartitionSpec {
  const entries = message.entries.map((entry): PartitionSpecEntry => {
    switch (entry.kind) {
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_UNCONSTRAINED:
        return UNCONSTRAINED;
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_AXIS:
        return entry.axes[0];
      case EntryKind.PARTITION_SPEC_ENTRY_KIND_TUPLE:
        return entry.axes;
      default:
        return null;
    }
  });
  return PartitionSpec.create(entries, { unreduced: message.unreduced, reduced: message.reduced });
}
