import type { DType } from "../../gen/ts/colocated/v1/table";
import type { Sharding } from "./sharding";
import { ValueObject } from "./value-key";

/** A dtype by its JAX name, such as "float32" or "bfloat16": the wire's D_TYPE_FLOAT32, in lower case. */
export type DTypeName = keyof typeof DType extends infer K
  ? K extends `D_TYPE_${infer Name}`
    ? Exclude<Lowercase<Name>, "unspecified">
    : never
  : never;

/** Options of a ShapeDtypeStruct beyond shape, dtype and sharding. */
export interface ShapeDtypeStructOptions {
  weakType?: boolean;
}

/** jax.ShapeDtypeStruct: an array's shape, dtype, sharding and weak type. */
export class ShapeDtypeStruct extends ValueObject {
  readonly shape: readonly number[];
  readonly sharding: Sharding | null;
  readonly weakType: boolean;

  constructor(
    shape: readonly number[],
    readonly dtype: DTypeName,
    sharding?: Sharding | null,
    options: ShapeDtypeStructOptions = {},
  ) {
    super();
    this.shape = Object.freeze([...shape]);
    this.sharding = sharding ?? null;
    this.weakType = options.weakType ?? false;
  }

  #headKey: string | undefined;

  /** The key of everything but the sharding; tables key leaves by it plus their sharding's entry. */
  get headKey(): string {
    this.#headKey ??= `${this.dtype}|${this.weakType}|${this.shape.join(",")}`;
    return this.#headKey;
  }

  protected computeKey(): string {
    return `ShapeDtypeStruct(${this.headKey},${this.sharding?.key ?? "null"})`;
  }
}
