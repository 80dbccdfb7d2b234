import { ValueLeaf as LeafMessage } from "../../gen/ts/colocated/v1/payload";
import { codecOf } from "../entries";
import {
  checkDTypeKey,
  checkDTypeName,
  checkKeyType,
  dtypeName,
  lowerDType,
  lowerKeyType,
} from "../entries/array-spec";
import { DecodeError, EncodeError } from "../errors";
import { FunctionRef, type SharedObject } from "../model/program";
import { UnknownEntry } from "../model/unknown-entry";
import {
  DTypeValue,
  PickledValue,
  PRNGImpl,
  UnknownValueLeaf,
  type ValueLeaf,
} from "../model/value-leaf";
import type { CheckContext } from "../table/check-table";
import type { LowerTable } from "../table/lower-table";
import { hasUnknownFields } from "../unknown-fields";
import { ANY, checkByName, lowerByName } from "./function";

/**
 * One leaf of a value (colocated.v1.2), by kind: a table object goes into the shared table as a
 * specs leaf's array spec does, and a dtype, a PRNG impl, a function or a pickle is written in
 * place. `path` builds the leaf's path, `value.leaves[i]`, only when an error needs it.
 */
export interface LeafLowerContext {
  readonly path: () => string;
  readonly table: LowerTable;
  readonly targetMinorVersion: number;
}

/** Lowers one leaf; a table object (and what it refers to) is added to the table. */
export function lower(leaf: ValueLeaf, ctx: LeafLowerContext): LeafMessage {
  const { path, table } = ctx;
  if (leaf instanceof DTypeValue) {
    const value = lowerDType(leaf.dtype, leaf.keyType, `${path()}.dtype`, ctx.targetMinorVersion);
    return { leaf: { $case: "dtype", value } };
  }
  if (leaf instanceof PRNGImpl) {
    const keyType = { impl: leaf.name, keyShape: leaf.keyShape };
    return { leaf: { $case: "prngImpl", value: lowerKeyType(keyType, `${path()}.prng_impl`) } };
  }
  if (leaf instanceof FunctionRef)
    return { leaf: { $case: "function", value: lowerByName(leaf, `${path()}.function`) } };
  if (leaf instanceof PickledValue) {
    const refs = leaf.refs.map((ref, i) => table.add(ref, () => `${path()}.pickled.refs[${i}]`));
    return { leaf: { $case: "pickled", value: { pickle: leaf.pickle, refs } } };
  }
  if (leaf instanceof UnknownValueLeaf) return LeafMessage.decode(leaf.bytes);
  if (codecOf(leaf as SharedObject) || leaf instanceof UnknownEntry)
    return { leaf: { $case: "entry", value: table.add(leaf as SharedObject, path) } };
  const name = (leaf as object)?.constructor?.name ?? typeof leaf;
  const kinds = "a table object, a DTypeValue, a PRNGImpl, a FunctionRef or a PickledValue";
  throw new EncodeError(path(), `a value leaf is ${kinds}, not ${name}`);
}

/** Checks one leaf: a reference into the table, or a dtype, PRNG impl, function or pickle. */
export function check(message: LeafMessage, path: () => string, ctx: CheckContext): void {
  const { refs, limits, minorVersion } = ctx;
  const leaf = message.leaf;
  switch (leaf?.$case) {
    case "entry":
      refs.require(leaf.value, refs.tableSize, () => `${path()}.entry`, ANY);
      return;
    case "dtype": {
      const at = `${path()}.dtype`;
      const dtype = checkDTypeName(leaf.value.dtype, `${at}.dtype`, minorVersion);
      checkDTypeKey(dtype, leaf.value.keyType, { path: at, limits, minorVersion });
      return;
    }
    case "prngImpl":
      checkKeyType(leaf.value, `${path()}.prng_impl`, limits);
      return;
    case "function":
      checkByName(leaf.value, `${path()}.function`);
      return;
    case "pickled":
      leaf.value.refs.forEach((ref, j) => {
        refs.require(ref, refs.tableSize, () => `${path()}.pickled.refs[${j}]`, ANY);
      });
      return;
    default: {
      // A kind from a newer minor version arrives as unknown fields: kept byte for byte.
      if (hasUnknownFields(message)) return;
      const detail = "no known leaf kind (entry, dtype, prng_impl, function or pickled)";
      throw new DecodeError(path(), "missing", detail);
    }
  }
}

/** Lifts a checked leaf; a table object is the table's, shared. */
export function lift(message: LeafMessage, objects: readonly SharedObject[]): ValueLeaf {
  const leaf = message.leaf;
  switch (leaf?.$case) {
    case "entry":
      return objects[leaf.value];
    case "dtype": {
      const { dtype, keyType } = leaf.value;
      const key = keyType && { impl: keyType.impl, keyShape: keyType.keyShape.map(Number) };
      return new DTypeValue(dtypeName(dtype), key);
    }
    case "prngImpl":
      return new PRNGImpl(leaf.value.impl, leaf.value.keyShape.map(Number));
    case "function":
      return new FunctionRef(leaf.value.module, leaf.value.qualname);
    case "pickled":
      return new PickledValue(
        leaf.value.pickle,
        leaf.value.refs.map((ref) => objects[ref]),
      );
    default:
      return new UnknownValueLeaf(LeafMessage.encode(message).finish());
  }
}
