import type { DeviceList } from "./device-list";
import { ValueObject } from "./value-key";

/** jax.sharding.AxisType. */
export type AxisType = "Auto" | "Explicit" | "Manual";

/** The axis types, by name, as in `AxisType.Explicit`. */
export const AxisType = Object.freeze({
  Auto: "Auto",
  Explicit: "Explicit",
  Manual: "Manual",
} as const);

/** jax.sharding.Mesh: a device list laid out row-major with named axes. */
export class Mesh extends ValueObject {
  readonly axisSizes: readonly number[];
  readonly axisNames: readonly string[];
  readonly axisTypes: readonly AxisType[];

  /** Axis types default to Auto, as in JAX. */
  constructor(
    readonly devices: DeviceList,
    axisSizes: readonly number[],
    axisNames: readonly string[],
    axisTypes?: readonly AxisType[],
  ) {
    super();
    this.axisSizes = Object.freeze([...axisSizes]);
    this.axisNames = Object.freeze([...axisNames]);
    this.axisTypes = Object.freeze(axisTypes ? [...axisTypes] : axisNames.map(() => AxisType.Auto));
  }

  /** The axis sizes by name. */
  get shape(): Record<string, number> {
    return Object.fromEntries(this.axisNames.map((name, i) => [name, this.axisSizes[i]]));
  }

  protected computeKey(): string {
    return `Mesh(${this.devices.key},${JSON.stringify([this.axisSizes, this.axisNames, this.axisTypes])})`;
  }
}
