import type { DType } from "../../gen/ts/colocated/v1/table";
import type { Sharding } from "./sharding";
import { ValueObject } from "./value-key";

/** A dtype by its JAX name, such as "float32" or "bfloat16": the wire's D_TYPE_FLOAT32, in lower case. */
export type DTypeName = keyof typeof DType extends infer K
  ? K extends `D_TYPE_${infer Name}`
    ? Exclude<Lowercase<Name>, "unspecified">
    : never
  : never;

/**
 * A PRNG key array's key type (dtype "key"): jax.random's impl by the name `jax.random.key_impl`
 * gives it (threefry2x32, rbg, unsafe_rbg or a custom impl's), and the shape of one key's data.
 */
export interface KeyType {
  readonly impl: string;
  readonly keyShape: readonly number[];
}

/** Options of a ShapeDtypeStruct beyond shape, dtype and sharding. */
export interface ShapeDtypeStructOptions {
  weakType?: boolean;
  /** The key type of a key array (dtype "key"), which it needs. */
  keyType?: KeyType | null;
}

// The tags JAX prints for its own impls (key<fry>); a custom impl prints as its name here.
const KEY_TAGS: Readonly<Record<string, string>> = {
  threefry2x32: "fry",
  rbg: "rbg",
  unsafe_rbg: "urbg",
};

/** A dtype as JAX prints it: "float32", or "key<fry>" for a key dtype. */
export function dtypeString(dtype: DTypeName, keyType: KeyType | null): string {
  if (dtype !== "key") return dtype;
  const impl = keyType?.impl ?? "";
  return `key<${KEY_TAGS[impl] ?? impl}>`;
}

/** jax.ShapeDtypeStruct: an array's shape, dtype, sharding and weak type. */
export class ShapeDtypeStruct extends ValueObject {
  readonly shape: readonly number[];
  readonly sharding: Sharding | null;
  readonly weakType: boolean;
  readonly keyType: KeyType | null;

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
    const { keyType } = options;
    this.keyType = keyType
      ? Object.freeze({ impl: keyType.impl, keyShape: Object.freeze([...keyType.keyShape]) })
      : null;
  }

  /** The dtype as JAX prints it: "float32", or "key<fry>" for a key array. */
  get dtypeString(): string {
    return dtypeString(this.dtype, this.keyType);
  }

  #headKey: string | undefined;

  /** The key of everything but the sharding; tables key leaves by it plus their sharding's entry. */
  get headKey(): string {
    if (this.#headKey === undefined) {
      const { keyType } = this;
      const key = keyType ? `|${JSON.stringify([keyType.impl, keyType.keyShape])}` : "";
      this.#headKey = `${this.dtype}|${this.weakType}|${this.shape.join(",")}${key}`;
    }
    return this.#headKey;
  }

  protected computeKey(): string {
    return `ShapeDtypeStruct(${this.headKey},${this.sharding?.key ?? "null"})`;
  }
}
