import { ArraySpecSchema, DTypeSchema } from "../../gen/es/colocated/v1/table_pb";
import {
  DType,
  type Entry,
  type KeyType as KeyTypeMessage,
  type ArraySpec as MessageType,
  ShardingType,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError, EncodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type DTypeName, type KeyType, ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { Sharding } from "../model/sharding";
import { fieldSince, newerValue, refuseNewer, requireVersion, valueSince } from "../schema-version";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext, ValueKey } from "../table/lower-table";
import type { Accepts, Checked } from "../table/references";
import { enumNames, lowercase, type Suffixes } from "./enum-names";
import { type Problem, raise, refuse } from "./problem";

const DTYPES = enumNames<DTypeName, Lowercase<Suffixes<typeof DType, "D_TYPE_">>>(
  DType,
  "D_TYPE_",
  lowercase,
);

/** Every dtype name, in enum order. */
export const DTYPE_NAMES: DTypeName[] = [...DTYPES.names];

/** The name of a checked dtype's enum value. */
export function dtypeName(value: DType): DTypeName {
  return DTYPES.name(value) as DTypeName;
}

/** The minor version that introduced a dtype, as the schema declares it. */
export function dtypeSince(dtype: DTypeName): number {
  return valueSince(DTypeSchema, DTYPES.values[dtype]);
}

/** The minor version that introduced ArraySpec.key_type. */
const KEY_TYPE_SINCE = fieldSince(ArraySpecSchema.field.keyType);

/** What checking an ArraySpec found: its shape as numbers, its dtype by name, its key type. */
export interface ArraySpecFacts {
  readonly shape: number[];
  readonly dtype: DTypeName;
  readonly keyType?: KeyType;
}

/** A reference to an ArraySpec. */
export const ARRAY_SPEC: Accepts<MessageType, ArraySpecFacts> = {
  name: "ArraySpec",
  accepts: (c): c is Checked<MessageType, ArraySpecFacts> => c.kind === "arraySpec",
};

/** A reference to a sharding: any sharding kind, or a kind of a newer version. */
export const SHARDING: Accepts<unknown, unknown> = {
  name: "sharding",
  accepts: (c): c is Checked => {
    const { kind } = c;
    return (
      kind === "namedSharding" ||
      kind === "singleDeviceSharding" ||
      kind === "gspmdSharding" ||
      kind === undefined
    );
  },
};

/** A leaf's value: its sharding's index (-1 for none), then its own fields. */
export function key(spec: ShapeDtypeStruct, ctx: LowerContext): ValueKey {
  const sharding = spec.sharding ? ctx.table.add(spec.sharding, () => `${ctx.path}.sharding`) : -1;
  return [sharding, spec.headKey];
}

/** An ArraySpec entry on its sharding's entry, if any. */
export function lower(spec: ShapeDtypeStruct, ctx: LowerContext): Entry {
  const { path, table } = ctx;
  const sharding = spec.sharding ? table.add(spec.sharding, () => `${path}.sharding`) : undefined;
  refuse(`${path}.shape`, shapeProblem(spec.shape));
  const shardingKind = sharding === undefined ? undefined : table.entries[sharding].kind;
  refuse(`${path}.sharding`, leafShardingProblem(spec.shape, shardingKind));
  const { dtype, keyType } = lowerDType(spec.dtype, spec.keyType, path, ctx.targetMinorVersion);
  const value: MessageType = {
    shape: spec.shape.map(BigInt),
    dtype,
    sharding,
    weakType: spec.weakType,
  };
  if (keyType) value.keyType = keyType;
  return { kind: { $case: "arraySpec", value } };
}

/**
 * A dtype and its key type as the wire writes them (an ArraySpec's, or a value's dtype, whose
 * fields are named alike): `path`.dtype and `path`.key_type, each checked against the target.
 */
export function lowerDType(
  name: DTypeName,
  keyType: KeyType | null,
  path: string,
  target: number,
): { dtype: DType; keyType?: KeyTypeMessage } {
  const dtype = DTYPES.value(name);
  if (dtype === undefined) throw new EncodeError(`${path}.dtype`, `unknown dtype "${name}"`);
  refuseNewer(`${path}.dtype`, `dtype ${name}`, valueSince(DTypeSchema, dtype), target);
  let message: KeyTypeMessage | undefined;
  if (keyType) {
    refuseNewer(`${path}.key_type`, "key_type", KEY_TYPE_SINCE, target);
    message = lowerKeyType(keyType, `${path}.key_type`);
  }
  const problem = keyTypeProblem(name, keyType !== null);
  if (problem) throw new EncodeError(`${path}.key_type`, problem.detail);
  return message ? { dtype, keyType: message } : { dtype };
}

/** A key type's message (an array's, or a PRNG impl's): its impl named, its key shape a shape. */
export function lowerKeyType(keyType: KeyType, path: string): KeyTypeMessage {
  refuse(`${path}.impl`, implProblem(keyType.impl));
  refuse(`${path}.key_shape`, shapeProblem(keyType.keyShape));
  return { impl: keyType.impl, keyShape: keyType.keyShape.map(BigInt) };
}

/** Checks an ArraySpec message: rank, dims, dtype, then its sharding's fit. */
export function check(message: MessageType, ctx: CheckContext): ArraySpecFacts {
  const { path, refs, index, limits } = ctx;
  const shape = checkDims(message.shape, `${path}.shape`, limits.maxRank);
  const dtype = checkDTypeName(message.dtype, `${path}.dtype`, ctx.minorVersion);
  const sharding = refs.optional(message.sharding, index, `${path}.sharding`, SHARDING);
  const keyType = checkDTypeKey(dtype, message.keyType, ctx);
  raise(`${path}.sharding`, leafShardingProblem(shape, sharding?.entry.kind));
  return keyType ? { shape, dtype, keyType } : { shape, dtype };
}

/** Checks a dtype's enum value at `path`: one this decoder knows, of the header's version. */
export function checkDTypeName(value: DType, path: string, minorVersion: number): DTypeName {
  const dtype = DTYPES.name(value);
  if (dtype === undefined) {
    const what = `dtype ${value}`;
    throw (
      newerValue(path, what, minorVersion) ??
      new DecodeError(path, "unknown-enum", `unknown ${what}`)
    );
  }
  requireVersion(path, dtype, valueSince(DTypeSchema, value), minorVersion);
  return dtype;
}

/** Checks the key type beside a dtype (at `ctx.path`.key_type): there exactly for a key dtype. */
export function checkDTypeKey(
  dtype: DTypeName,
  message: KeyTypeMessage | undefined,
  ctx: Pick<CheckContext, "path" | "limits" | "minorVersion">,
): KeyType | undefined {
  const path = `${ctx.path}.key_type`;
  if (message) requireVersion(path, "key_type", KEY_TYPE_SINCE, ctx.minorVersion);
  const keyType = message && checkKeyType(message, path, ctx.limits);
  const problem = keyTypeProblem(dtype, keyType !== undefined);
  if (problem) throw new DecodeError(path, problem.code, problem.detail);
  return keyType;
}

/** Checks a KeyType message at `path`: its key shape's rank and dims, then its impl. */
export function checkKeyType(message: KeyTypeMessage, path: string, limits: DecodeLimits): KeyType {
  const keyShape = checkDims(message.keyShape, `${path}.key_shape`, limits.maxRank);
  raise(`${path}.impl`, implProblem(message.impl));
  return { impl: message.impl, keyShape };
}

/** A key type belongs to a key array, which needs one. */
function keyTypeProblem(
  dtype: DTypeName,
  hasKeyType: boolean,
): { code: "missing" | "invalid-value"; detail: string } | undefined {
  if (dtype === "key" && !hasKeyType)
    return { code: "missing", detail: "a key array needs its key type" };
  if (dtype !== "key" && hasKeyType)
    return { code: "invalid-value", detail: `a ${dtype} array has no key type` };
  return undefined;
}

/** Checks a key impl's name: JAX's impls all have one. */
function implProblem(impl: string): Problem | undefined {
  return impl ? undefined : { code: "invalid-value", detail: "a key impl needs a name" };
}

/** Checks a shape's rank against the limit and its dims against 2^53-1; gives them as numbers. */
function checkDims(dims: readonly bigint[], path: string, maxRank: number): number[] {
  if (dims.length > maxRank) {
    const detail = `rank ${dims.length} passes the limit of ${maxRank}`;
    throw new DecodeError(path, "limit-exceeded", detail);
  }
  return dims.map((d, i) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError(`${path}[${i}]`, "invalid-value", `dimension ${d} passes 2^53-1`);
    }
    return Number(d);
  });
}

/** A checked ArraySpec, on its lifted sharding. */
export function lift(message: MessageType, ctx: LiftContext<ArraySpecFacts>): ShapeDtypeStruct {
  const sharding = message.sharding === undefined ? null : ctx.objects[message.sharding];
  const { shape, dtype, keyType } = ctx.facts;
  return new ShapeDtypeStruct(shape, dtype, sharding as Sharding | null, {
    weakType: message.weakType,
    keyType,
  });
}

/** Checks an array shape: non-negative safe integers. */
export function shapeProblem(shape: readonly number[]): Problem | undefined {
  const bad = shape.findIndex((d) => !Number.isSafeInteger(d) || d < 0);
  if (bad >= 0)
    return { code: "invalid-value", detail: `dimension ${bad} is ${shape[bad]}, not a size` };
  return undefined;
}

/**
 * Checks that a sharding, given by its entry's oneof (absent for none), may sit on an array of this shape, as
 * jax.ShapeDtypeStruct checks it: the array's rank covers the sharding's data dims, and a
 * GSPMD sharding is not manual and types its trailing tile dims only as replicated.
 */
export function leafShardingProblem(
  shape: readonly number[],
  sharding: Entry["kind"],
): Problem | undefined {
  let rank = 0;
  if (sharding?.$case === "namedSharding") {
    rank = sharding.value.spec?.entries.length ?? 0;
  } else if (sharding?.$case === "gspmdSharding") {
    const { type, tileAssignment, replicateOnLastTileDim, lastTileDims } = sharding.value;
    if (type === ShardingType.SHARDING_TYPE_MANUAL)
      return { code: "invalid-value", detail: "JAX puts no manual GSPMD sharding on an array" };
    if (lastTileDims.some((t) => t !== ShardingType.SHARDING_TYPE_REPLICATED)) {
      const detail = "JAX puts no GSPMD sharding with manual or other typed tile dims on an array";
      return { code: "invalid-value", detail };
    }
    if (type === ShardingType.SHARDING_TYPE_MAXIMAL) rank = 1;
    if (type === ShardingType.SHARDING_TYPE_OTHER) {
      const tileRank = tileAssignment?.dims.length ?? 0;
      rank = tileRank - (replicateOnLastTileDim ? 1 : 0) - lastTileDims.length;
    }
  }
  if (shape.length >= rank) return undefined;
  const detail = `a sharding of rank ${rank} does not fit an array of rank ${shape.length}`;
  return { code: "invalid-value", detail };
}
