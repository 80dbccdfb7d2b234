export { canonicalizePayload } from "./canonicalize";
export { decodeProgram, decodeSpecs } from "./decode";
export {
  type EncodeOptions,
  encodeProgram,
  encodeSpecs,
  lowerProgramPayload,
  lowerSpecsPayload,
} from "./encode";
export { DTYPE_NAMES } from "./entries/array-spec";
export { DECODE_ERROR_CODES, DecodeError, type DecodeErrorCode, EncodeError } from "./errors";
export { findIota, type Iota, materializeIota } from "./iota";
export { payloadFromJson, payloadKindOf, payloadToJson } from "./json-form";
export { DEFAULT_LIMITS, type DecodeLimits } from "./limits";
export { Device, DeviceList } from "./model/device-list";
export { AxisType, Mesh } from "./model/mesh";
export {
  PartitionSpec,
  type PartitionSpecEntry,
  type PartitionSpecOptions,
  UNCONSTRAINED,
  Unconstrained,
} from "./model/partition-spec";
export {
  FunctionRef,
  PickledFunction,
  type Program,
  type SharedObject,
  type Specs,
  UnknownFunction,
} from "./model/program";
export {
  type DTypeName,
  type KeyType,
  ShapeDtypeStruct,
  type ShapeDtypeStructOptions,
} from "./model/shape-dtype-struct";
export {
  GSPMDSharding,
  type HloSharding,
  type HloShardingType,
  NamedSharding,
  type Sharding,
  type ShardingOptions,
  SingleDeviceSharding,
} from "./model/sharding";
export { forEachNode, PyTreeDef, type TreeNode } from "./model/tree";
export { treeFlatten, treeUnflatten } from "./model/tree-util";
export { CustomNode, NamedTuple, Tuple, tuple } from "./model/tree-values";
export { UnknownEntry } from "./model/unknown-entry";
export type { DecodeOptions } from "./payload/header";
export { arrayByteLength } from "./rpc/array-bytes";
export { callInputs } from "./rpc/call-inputs";
export {
  type ConnectOptions,
  DEFAULT_DEADLINE_MS,
  type ExecuteOptions,
  type ExecuteResult,
  WorkerClient,
} from "./rpc/client";
export { VersionMismatchError, WorkerError } from "./rpc/errors";
export { DEFAULT_VERSION_RANGE, negotiateVersion, type VersionRange } from "./rpc/negotiate";
export { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";
