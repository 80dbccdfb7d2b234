/**
 * colocated-wire's core: the model, encoding, decoding, the JSON form, errors and limits. It runs
 * wherever JavaScript runs (no Node built-ins, no gRPC); the worker client is colocated-wire/rpc.
 */
export { canonicalizePayload } from "./canonicalize";
export { decodeProgram, decodeSpecs, decodeValue } from "./decode";
export * from "./diff";
export {
  type EncodeOptions,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  lowerProgramPayload,
  lowerSpecsPayload,
  lowerValuePayload,
} from "./encode";
export { DTYPE_NAMES } from "./entries/array-spec";
export { DECODE_ERROR_CODES, DecodeError, type DecodeErrorCode, EncodeError } from "./errors";
export { findIota, type Iota, materializeIota } from "./iota";
export { payloadFromJson, payloadToJson } from "./json-form";
export { DEFAULT_LIMITS, type DecodeLimits } from "./limits";
export { Device, DeviceList } from "./model/device-list";
export {
  createDeviceMesh,
  MakeMeshError,
  type MakeMeshOptions,
  type MeshDevice,
  makeMesh,
} from "./model/make-mesh";
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
export { type DictKey, Pickled } from "./model/tree-dict-keys";
export { treeFlatten, treeUnflatten } from "./model/tree-util";
export {
  CustomNode,
  DefaultDict,
  NamedTuple,
  OrderedDict,
  Tuple,
  tuple,
} from "./model/tree-values";
export { UnknownEntry } from "./model/unknown-entry";
export {
  DTypeValue,
  PickledValue,
  PRNGImpl,
  UnknownValueLeaf,
  type Value,
  type ValueLeaf,
} from "./model/value-leaf";
export { type DecodeOptions, type PayloadKindName, payloadKindOf } from "./payload/header";
export {
  describeWriter,
  payloadWriter,
  thisWriter,
  type Writer,
  type WriterLanguageName,
} from "./payload/writer";
export {
  type DeviceShard,
  type DistinctShard,
  devicesIndicesMap,
  distinctShards,
  type ShardIndex,
  ShardIndexError,
  shardShape,
} from "./shard-indices";
export { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";
