/** colocated-wire/rpc: the Node-only client of a colocated-Python worker, over gRPC. */

export type { WorkerRuntime } from "../../gen/ts/colocated/v1/service";
export {
  DEFAULT_MAX_QUEUED_CALLS,
  type QueueOptions,
  type WorkerLimits,
} from "./client/call-queue";
export type { ChannelOptions, Compression, TlsOptions } from "./client/channel";
export {
  type ConnectOptions,
  DEFAULT_DEADLINE_MS,
  type ExecuteOptions,
  type ExecuteResult,
  WorkerClient,
} from "./client/client";
export { DEFAULT_VERSION_RANGE, negotiateVersion, type VersionRange } from "./client/negotiate";
export type { JobDevice, Topology } from "./client/topology";
export { VersionMismatchError, WorkerError } from "./errors";
export {
  describeMember,
  type GroupMember,
  MemberError,
  type MemberHealth,
} from "./group/group-member";
export { GroupRuntimeError, type MemberRuntime } from "./group/group-runtime";
export { type GroupTopology, GroupTopologyError } from "./group/group-topology";
export { type GroupOptions, WorkerGroup } from "./group/worker-group";
export { arrayByteLength } from "./sharded/array-bytes";
export { callInputs } from "./sharded/call-inputs";
export {
  DEFAULT_CHUNK_BYTES,
  MAX_CHUNK_BYTES,
  type ShardedOptions,
  type ShardedProgress,
  type ShardedResult,
} from "./sharded/sharded-call";
