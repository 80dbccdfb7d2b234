/** colocated-wire/rpc: the Node-only client of a colocated-Python worker, over gRPC. */

export type { WorkerRuntime } from "../../gen/ts/colocated/v1/service";
export { arrayByteLength } from "./array-bytes";
export { callInputs } from "./call-inputs";
export { DEFAULT_MAX_QUEUED_CALLS, type QueueOptions, type WorkerLimits } from "./call-queue";
export type { ChannelOptions, Compression, TlsOptions } from "./channel";
export {
  type ConnectOptions,
  DEFAULT_DEADLINE_MS,
  type ExecuteOptions,
  type ExecuteResult,
  WorkerClient,
} from "./client";
export { VersionMismatchError, WorkerError } from "./errors";
export {
  describeMember,
  type GroupMember,
  MemberError,
  type MemberHealth,
} from "./group-member";
export { GroupRuntimeError, type MemberRuntime } from "./group-runtime";
export { type GroupTopology, GroupTopologyError } from "./group-topology";
export { DEFAULT_VERSION_RANGE, negotiateVersion, type VersionRange } from "./negotiate";
export {
  DEFAULT_CHUNK_BYTES,
  MAX_CHUNK_BYTES,
  type ShardedOptions,
  type ShardedProgress,
  type ShardedResult,
} from "./sharded-call";
export type { JobDevice, Topology } from "./topology";
export { type GroupOptions, WorkerGroup } from "./worker-group";
