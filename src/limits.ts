import { getOption } from "@bufbuild/protobuf";
import { default_max, Limit, LimitSchema } from "../gen/es/colocated/v1/limit_pb";

/**
 * Bounds that keep a decoder's work and memory proportional to what a sane payload needs.
 * Each is a value of the Limit enum in proto/colocated/v1/limit.proto, named after it
 * (LIMIT_MAX_RANK is maxRank), which also holds its default.
 */
export interface DecodeLimits {
  /** Largest payload accepted, in bytes. */
  maxPayloadBytes: number;
  /** Most entries in one SharedObjectTable. */
  maxTableEntries: number;
  /** Most device ids in one device list, checked before an iota is materialized. */
  maxDevicesPerList: number;
  /** Most axes in one mesh or dims in one iota. */
  maxRank: number;
  /** Most nodes in one PyTreeDef. */
  maxTreeNodes: number;
  /** Deepest nesting of one PyTreeDef. */
  maxTreeDepth: number;
  /** Most fields of a newer minor version (unknown here) in one payload. */
  maxUnknownFields: number;
}

/** The DecodeLimits field a Limit value names: LIMIT_MAX_RANK is maxRank. */
export function limitName(limit: Limit): keyof DecodeLimits {
  const value = LimitSchema.value[limit];
  if (!value || limit === Limit.UNSPECIFIED) throw new Error(`no limit numbered ${limit}`);
  const words = value.localName.toLowerCase().split("_");
  return words
    .map((word, i) => (i ? word[0].toUpperCase() + word.slice(1) : word))
    .join("") as keyof DecodeLimits;
}

/** The defaults, each the `default_max` option of its value in limit.proto. */
export const DEFAULT_LIMITS: Readonly<DecodeLimits> = Object.freeze(
  Object.fromEntries(
    LimitSchema.values
      .filter((value) => value.number !== Limit.UNSPECIFIED)
      .map((value) => [limitName(value.number), getOption(value, default_max)]),
  ) as unknown as DecodeLimits,
);

/** Fills in defaults for any limit the caller left out. */
export function resolveLimits(limits?: Partial<DecodeLimits>): DecodeLimits {
  return { ...DEFAULT_LIMITS, ...limits };
}
