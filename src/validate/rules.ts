/**
 * Rules that a model must obey whichever way it travels. Lowering turns a broken rule into an
 * EncodeError, decoding into a DecodeError; both use these same checks.
 */

/** The largest device id the wire carries (JAX and IFRT ids are int32). */
export const MAX_DEVICE_ID = 0x7fffffff;

/** A broken rule: its DecodeError code and what is wrong. */
export interface Problem {
  code: "invalid-mesh" | "duplicate-device" | "unknown-axis" | "repeated-axis" | "invalid-value";
  detail: string;
}

/** Checks a mesh's axes against its device count. */
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
  const product = axisSizes.reduce((a, b) => a * b, 1);
  if (product !== deviceCount) {
    const shape = axisSizes.join("x") || "()";
    return {
      code: "invalid-mesh",
      detail: `axis sizes ${shape} hold ${product} devices, but the device list has ${deviceCount}`,
    };
  }
  const repeated = firstRepeat(axisNames);
  if (repeated !== undefined)
    return { code: "invalid-mesh", detail: `axis name "${repeated}" repeats` };
  if (axisNames.some((n) => n === ""))
    return { code: "invalid-mesh", detail: "an axis name is empty" };
  return undefined;
}

/** Checks a device list's ids: in range and distinct. */
export function deviceIdsProblem(ids: ArrayLike<number>): Problem | undefined {
  const seen = new Set<number>();
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id > MAX_DEVICE_ID) {
      return {
        code: "invalid-value",
        detail: `device id ${id} at position ${i} is not in [0, 2^31-1]`,
      };
    }
    if (seen.has(id)) return { code: "duplicate-device", detail: `device id ${id} appears twice` };
    seen.add(id);
  }
  return undefined;
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

/**
 * Checks a PartitionSpec against its mesh as JAX does: every axis exists and is used once
 * (entries, unreduced and reduced together), unreduced and reduced axes are Explicit, and
 * UNCONSTRAINED needs an Auto axis.
 */
export function specAxesProblem(
  spec: SpecAxes,
  meshAxes: readonly string[],
  meshTypes: readonly string[],
): Problem | undefined {
  const used = [...spec.partitions, ...spec.unreduced, ...spec.reduced];
  const typeOf = new Map(meshAxes.map((name, i) => [name, meshTypes[i]]));
  const unknown = used.find((a) => !typeOf.has(a));
  if (unknown !== undefined) {
    return {
      code: "unknown-axis",
      detail: `axis "${unknown}" is not a mesh axis (mesh has ${meshAxes.join(", ") || "none"})`,
    };
  }
  const repeated = firstRepeat(used);
  if (repeated !== undefined)
    return { code: "repeated-axis", detail: `axis "${repeated}" is used twice` };
  for (const [role, axes] of [
    ["unreduced", spec.unreduced],
    ["reduced", spec.reduced],
  ] as const) {
    const wrong = axes.find((a) => typeOf.get(a) !== "Explicit");
    if (wrong !== undefined) {
      return {
        code: "invalid-value",
        detail: `${role} axis "${wrong}" is ${typeOf.get(wrong)}, not Explicit`,
      };
    }
  }
  if (spec.unconstrained && !meshTypes.includes("Auto")) {
    return { code: "invalid-value", detail: "UNCONSTRAINED needs a mesh with an Auto axis" };
  }
  return undefined;
}

/** Checks an array shape: non-negative safe integers. */
export function shapeProblem(shape: readonly number[]): Problem | undefined {
  const bad = shape.findIndex((d) => !Number.isSafeInteger(d) || d < 0);
  if (bad >= 0)
    return { code: "invalid-value", detail: `dimension ${bad} is ${shape[bad]}, not a size` };
  return undefined;
}

function firstRepeat(names: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) return n;
    seen.add(n);
  }
  return undefined;
}
