import type { Case } from "../../test/support/scenarios";
import type { Policy, Timing } from "../common/measure";
import type { DefaultScenario } from "./default-scenario";
import type { DiffRow } from "./diff";

/** The formats compared; (c) is the baseline every ratio is against. */
export type SideId = "a" | "b" | "c" | "d1" | "d2";

export const SIDES: Record<SideId, string> = {
  a: "colocated-wire in TypeScript: `encodeSpecs` / `decodeSpecs` (decode validates and lifts into the TS model)",
  b: "colocated-wire in Python: `serialize_specs` / `deserialize_specs`, lifting into real JAX objects",
  c: "JAX 0.10.2 colocated_python: `serialization._serialize((treedef, leaves))` / `_deserialize` (cloudpickle with its table of equal Mesh/NamedSharding/DeviceList objects)",
  d1: "per-spec protobuf, every shared object inlined: one SpecsPayload whose table gives each leaf its own plain DeviceList, Mesh, NamedSharding and ArraySpec (like IFRT's ArraySpecProto with a full device list per spec); encoded from the TS model, decoded and lifted by `decodeSpecs`",
  d2: "JAX's pickle before it deduplicated across leaves: `_serialize(treedef)` plus `_serialize(leaf)` for each leaf separately, so every leaf carries its own mesh and device ids; decoded with `_deserialize` per blob",
};

export const SIDE_ORDER: SideId[] = ["a", "b", "c", "d1", "d2"];

export interface SideResult {
  bytes: number;
  sha256?: string;
  /** Encoding the same objects again and again, as a training loop does. */
  encode: Timing;
  /** (a) in S3: encoding objects made afresh for every call, as a program that rebuilds its specs. */
  encodeCold?: Timing;
  decode: Timing;
  /** (b) and (c): the payload's size after zlib level 9 and after lzma (xz, preset 6). */
  compressed?: CompressedSizes;
  /** (a) and (b): the least a reader (and for (a) a writer) of this schema does (limit.ts). */
  limit?: SchemaLimit;
}

/**
 * The least any reader or writer of the schema does with a case's payload as 1.2 writes it
 * (its keys in full): (a) ts-proto's generated decode and encode; (b) upb's parse of the bytes
 * plus `jax.tree_util.tree_unflatten` of the tree with its leaves ready.
 */
export interface SchemaLimit {
  decode: Timing;
  encode?: Timing;
}

/** What a general-purpose compressor makes of a payload: the rival a user has in one line. */
export interface CompressedSizes {
  zlib9: number;
  lzma: number;
}

export interface CaseResult {
  case: Case & { devices: number };
  sides: Partial<Record<SideId, SideResult>>;
  /** Why a side did not run for this case. */
  skipped: Partial<Record<SideId, string>>;
  /** A side that failed, with its error. */
  errors: Partial<Record<SideId, string>>;
  /** S3: the limit, writing and checking an Int32Array of this many ids (bench/codec/limit.ts). */
  limit?: Timing;
}

export interface JaxStartup {
  devices: number;
  /** Seconds from starting the Python process to jax.devices() returning. */
  seconds: number;
  /** Threads of the process once JAX is up. */
  threads: number;
}

export interface TargetCheck {
  target: string;
  met: boolean;
  detail: string;
}

export interface RunMeta {
  date: string;
  machine: string;
  versions: string;
  quick: boolean;
  commit: string;
  policy: Policy;
  seconds: number;
  /** The 1-minute load average when the run started and ended: other work skews times. */
  loadAverage: { before: number; after: number };
}

export interface RunResults {
  meta: RunMeta;
  /** `npm start`'s example in TypeScript: the default scenario of the wire format. */
  defaultScenario: DefaultScenario;
  cases: CaseResult[];
  jaxStartup: JaxStartup[];
  /** (a) and (b) must be byte-identical; a mismatch is a bug. */
  crossCheck: { case: string; identical: boolean; detail: string }[];
  targets: TargetCheck[];
  /** Decoding an in-order mesh of a million devices, in a child process (bench/codec/decode-memory.ts). */
  decodeMemory?: DecodeMemory;
  /**
   * A colocated call with JAX's serialization and with colocated_wire.plugin (bench/codec/plugin.ts),
   * under each JAX of bench/codec/plugin-versions.ts: a row per case and version.
   */
  plugin: PluginResult[];
  /** Two S2 payloads diffed in each language, beside decoding both (bench/codec/diff.ts). */
  diff?: DiffRow[];
}

/** JAX's own serialization, or colocated_wire.plugin installed. */
export type PluginSideId = "jax" | "plugin";

export interface PluginCase {
  id: string;
  /** A dict of this many leaves, alternating two NamedShardings over the mesh. */
  leafCount: number;
  mesh: [number, number];
  /** Every leaf with a NamedSharding of its own, equal to the others' but not the same object. */
  fresh?: boolean;
}

export interface PluginSideResult {
  /** A fresh colocated function's first call: it writes every payload. */
  firstCall: Timing;
  /** Later calls reuse the specialization and write nothing. */
  steadyCall: Timing;
  /**
   * Reading the first call's programs back, timed apart by the bench where this JAX does not
   * read them on CPU (before 0.8, which runs the function in process).
   */
  readBack?: Timing;
  /** The first call's programs in order; the first is the function with its specialization. */
  programBytes: number[];
  /** The output-spec carriers the first call sent back, the bytes inside their base64 text. */
  carrierBytes: number[];
}

export interface PluginResult {
  /** The JAX version it ran under (its venv's name until its process started). */
  jax: string;
  case: PluginCase;
  sides: Partial<Record<PluginSideId, PluginSideResult>>;
  errors: Partial<Record<PluginSideId, string>>;
}

export interface DecodeMemory {
  devices: number;
  payloadBytes: number;
  /** Heap and array-buffer growth across decodeSpecs, no GC in between: what decoding allocated. */
  decodeBytes: number;
  /** The same growth across then asking the lifted list for its ids. */
  idsBytes: number;
  /** Resident set growth across decodeSpecs. */
  rssBytes: number;
}
