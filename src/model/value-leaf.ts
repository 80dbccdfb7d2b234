import type { FunctionRef, SharedObject } from "./program";
import type { DTypeName, KeyType } from "./shape-dtype-struct";
import type { PyTreeDef } from "./tree";

/**
 * The leaves of a value payload (colocated.v1.2): besides table objects, what JAX's colocated
 * serialization is handed that is no array spec: dtypes, PRNG impls, functions by name, and
 * pickles of anything else.
 */

/** A dtype as a value (np.dtype, or a key dtype such as key<fry> with its key type). */
export class DTypeValue {
  /** The key type of a key dtype ("key"), which it needs; null for every other dtype. */
  readonly keyType: KeyType | null;

  constructor(
    readonly dtype: DTypeName,
    keyType?: KeyType | null,
  ) {
    this.keyType = keyType
      ? Object.freeze({ impl: keyType.impl, keyShape: Object.freeze([...keyType.keyShape]) })
      : null;
  }
}

/** A PRNG impl (jax.random's PRNGImpl), by the name jax.random registers it under. */
export class PRNGImpl {
  readonly keyShape: readonly number[];

  constructor(
    readonly name: string,
    /** The shape of one key's raw data, checked against the impl of that name on reading. */
    keyShape: readonly number[],
  ) {
    this.keyShape = Object.freeze([...keyShape]);
  }
}

/** A cloudpickled value; TypeScript keeps the bytes and the shared objects they name, as PickledFunction does. */
export class PickledValue {
  constructor(
    readonly pickle: Uint8Array,
    /** The pickle's persistent ids, in order: shared objects it holds. */
    readonly refs: readonly SharedObject[],
  ) {}
}

/** A leaf of a kind from a newer minor version, kept as its `ValueLeaf` message's bytes. */
export class UnknownValueLeaf {
  constructor(readonly bytes: Uint8Array) {}
}

/** One leaf of a value: a table object, or one of the leaf kinds above, or a function by name. */
export type ValueLeaf =
  | SharedObject
  | DTypeValue
  | PRNGImpl
  | FunctionRef
  | PickledValue
  | UnknownValueLeaf;

/** A value's pytree, split into structure and leaves. */
export interface Value {
  treedef: PyTreeDef;
  leaves: ValueLeaf[];
}
