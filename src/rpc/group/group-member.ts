import { status } from "@grpc/grpc-js";
import type { JobDevice } from "../client/topology";
import { WorkerError } from "../errors";

/** A worker of a group: where it listens, which process of the job it is, and its devices. */
export interface GroupMember {
  target: string;
  processIndex: number;
  devices: readonly JobDevice[];
}

/** Whether a member answered a probe (GetTopology as the same process) by its deadline. */
export interface MemberHealth {
  member: GroupMember;
  alive: boolean;
  /** Why it is not alive. */
  error?: Error;
}

/** `process 1 (127.0.0.1:5001)`: a member as errors name it. */
export function describeMember(member: GroupMember): string {
  return `process ${member.processIndex} (${member.target})`;
}

/** How many cancelled members a MemberError's message names; `cancelled` holds them all. */
const MAX_NAMED = 8;

/**
 * A group call failed because one member failed: which member, and why (`cause`: its
 * WorkerError, or the DecodeError of its answer). The call was cancelled on the others.
 */
export class MemberError extends WorkerError {
  override readonly name: string = "MemberError";

  constructor(
    readonly member: GroupMember,
    override readonly cause: Error,
    /** The members whose calls were cancelled because of it. */
    readonly cancelled: readonly GroupMember[],
  ) {
    const code = cause instanceof WorkerError ? cause.code : status.INTERNAL;
    const named = cancelled.slice(0, MAX_NAMED).map(describeMember);
    if (cancelled.length > MAX_NAMED) named.push(`${cancelled.length - MAX_NAMED} more`);
    const others = named.length ? `; cancelled on ${named.join(", ")}` : "";
    super(
      code,
      cause instanceof WorkerError ? cause.details : cause.message,
      `member ${describeMember(member)} failed: ${cause.message}${others}`,
    );
  }
}
