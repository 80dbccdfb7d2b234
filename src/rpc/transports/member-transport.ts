import type { WorkerClient } from "../client/client";
import type { GroupCall } from "../group/group-call";
import type { GroupProgram } from "../group/group-program";
import type { CheckedCall, ShardedProgress } from "../sharded/sharded-call";

/** The names of the ways a member's call travels, in the order a group prefers them. */
export type TransportName = "relays" | "sessions" | "streams";

/** What a group's options say about its transport (WorkerGroup's GroupOptions). */
export interface TransportOptions {
  /**
   * Carry each call whose inputs are small (at most 1 MiB a member) on one long-lived Session
   * stream per member, when every member serves them (true by default); false calls every
   * member with a stream of its own (ExecuteSharded) every call.
   */
  sessions?: boolean;
  /**
   * How many members' sessions each relaying member carries (Relay), itself among them: the
   * controller then keeps one stream per relay, not one per member, which keeps a member's
   * call as cheap at a thousand members as at sixteen (docs/multi-worker.md). The first of
   * each run of this many members (in the order of the targets) relays for the run, reaching
   * the others at the targets given here. By default max(RELAY_FROM, ⌈√N⌉) from RELAY_FROM
   * members up, when every member serves relays; 0 or 1: a session from the controller to
   * each member.
   */
  relayFanout?: number;
}

/** One call of a group, as every transport gets it: what to send, where answers land, when to stop. */
export interface MemberCalls {
  program: GroupProgram;
  checked: CheckedCall;
  /** The call's shared state: its output specs and the buffers every member's shards land in. */
  call: GroupCall;
  /** Each member's handle of the program, loaded before the call. */
  digests: readonly Uint8Array[];
  /** The call's name on every member of the job (src/rpc/sharded/call-id.ts). */
  callId: string;
  /** When the call's time is up, as Date.now() counts. */
  deadline: number;
  /** The call's deadline as it was given, for the message of a member out of time. */
  deadlineMs: number;
  /** Aborted when the call must stop on every member (one failed, or the caller cancelled). */
  cancel: AbortSignal;
  onProgress?: (member: number, progress: ShardedProgress) => void;
}

/**
 * One way a group's calls reach its members. A group chooses one when it forms
 * (chooseTransport); when a call fails and the transport is `broken`, the group closes it and
 * sends later calls by streams, the transport every worker serves.
 */
export interface MemberTransport {
  readonly name: TransportName;
  /** Whether it carries this program's calls; the group sends the others by streams. */
  carries(program: GroupProgram): boolean;
  /** Starts the call on every member: one promise a member, settled when its answer has ended. */
  call(calls: MemberCalls): Promise<unknown>[];
  /** Whether it serves no more calls (a member refused to open another stream). */
  readonly broken: boolean;
  /** How many members carry the others' calls (0 unless relayed). */
  readonly relays: number;
  /** Member calls carried over long-lived streams, and how many such streams were opened. */
  readonly counts: { calls: number; streams: number };
  /** Ends its streams; calls in flight on them fail. */
  close(): void;
}

/**
 * A kind of transport in the registry (src/rpc/transports/index.ts): opens it over a group's
 * members, or gives undefined when the options rule it out or a member refuses it (the next
 * kind is tried then). Throws what else went wrong (a worker is unreachable).
 */
export interface TransportKind {
  readonly name: TransportName;
  open(
    clients: readonly WorkerClient[],
    version: number,
    options: TransportOptions,
    deadlineMs: number,
  ): Promise<MemberTransport | undefined>;
}
