import { DTypeSchema } from "../../gen/es/colocated/v1/table_pb";
import {
  DType,
  type Entry,
  type ArraySpec as MessageType,
  ShardingType,
} from "../../gen/ts/colocated/v1/table";
import { DecodeError, EncodeError } from "../errors";
import { type DTypeName, ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { Sharding } from "../model/sharding";
import { valueSince } from "../schema-version";
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

/** The minor version that introduced a dtype, as the schema declares it. */
export function dtypeSince(dtype: DTypeName): number {
  return valueSince(DTypeSchema, DTYPES.values[dtype]);
}

/** What checking an ArraySpec found: its shape as numbers and its dtype by name. */
export interface ArraySpecFacts {
  readonly shape: number[];
  readonly dtype: DTypeName;
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
  const sharding = spec.sharding ? ctx.table.add(spec.sharding, `${ctx.path}.sharding`) : -1;
  return [sharding, spec.headKey];
}

/** An ArraySpec entry on its sharding's entry, if any. */
export function lower(spec: ShapeDtypeStruct, ctx: LowerContext): Entry {
  const { path, table } = ctx;
  const sharding = spec.sharding ? table.add(spec.sharding, `${path}.sharding`) : undefined;
  refuse(`${path}.shape`, shapeProblem(spec.shape));
  const shardingKind = sharding === undefined ? undefined : table.entries[sharding].kind;
  refuse(`${path}.sharding`, leafShardingProblem(spec.shape, shardingKind));
  const dtype = DTYPES.value(spec.dtype);
  if (dtype === undefined) throw new EncodeError(`${path}.dtype`, `unknown dtype "${spec.dtype}"`);
  const value = { shape: spec.shape.map(BigInt), dtype, sharding, weakType: spec.weakType };
  return { kind: { $case: "arraySpec", value } };
}

/** Checks an ArraySpec message: rank, dims, dtype, then its sharding's fit. */
export function check(message: MessageType, ctx: CheckContext): ArraySpecFacts {
  const { path, refs, index, limits } = ctx;
  if (message.shape.length > limits.maxRank) {
    throw new DecodeError(
      `${path}.shape`,
      "limit-exceeded",
      `rank ${message.shape.length} passes the limit of ${limits.maxRank}`,
    );
  }
  const shape = message.shape.map((d, i) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError(`${path}.shape[${i}]`, "invalid-value", `dimension ${d} passes 2^53-1`);
    }
    return Number(d);
  });
  const dtype = DTYPES.name(message.dtype);
  if (dtype === undefined)
    throw new DecodeError(`${path}.dtype`, "unknown-enum", `unknown dtype ${message.dtype}`);
  const sharding = refs.optional(message.sharding, index, `${path}.sharding`, SHARDING);
  raise(`${path}.sharding`, leafShardingProblem(shape, sharding?.entry.kind));
  return { shape, dtype };
}

/** A checked ArraySpec, on its lifted sharding. */
export function lift(message: MessageType, ctx: LiftContext<ArraySpecFacts>): ShapeDtypeStruct {
  const sharding = message.sharding === undefined ? null : ctx.objects[message.sharding];
  const { shape, dtype } = ctx.facts;
  return new ShapeDtypeStruct(shape, dtype, sharding as Sharding | null, {
    weakType: message.weakType,
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
