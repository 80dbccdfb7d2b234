/** Bounds that keep a decoder's work and memory proportional to what a sane payload needs. */
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

/** The defaults, also documented in docs/wire-format.md and used by the Python side. */
export const DEFAULT_LIMITS: Readonly<DecodeLimits> = Object.freeze({
  maxPayloadBytes: 64 * 1024 * 1024,
  maxTableEntries: 1_000_000,
  maxDevicesPerList: 4_194_304,
  maxRank: 64,
  maxTreeNodes: 10_000_000,
  maxTreeDepth: 1_000,
  maxUnknownFields: 1_000_000,
});

/** Fills in defaults for any limit the caller left out. */
export function resolveLimits(limits?: Partial<DecodeLimits>): DecodeLimits {
  return { ...DEFAULT_LIMITS, ...limits };
}
