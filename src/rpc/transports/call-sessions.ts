import { status } from "@grpc/grpc-js";
import { WorkerError } from "../errors";
import type { GroupCall } from "../group/group-call";
import type { GroupProgram } from "../group/group-program";
import { callTail } from "../messages/session-request";
import type { SessionPart } from "../messages/session-response";
import type { CheckedCall, ShardedProgress } from "../sharded/sharded-call";
import { ShardedOutputs } from "../sharded/sharded-outputs";
import type { MemberSession, SessionReceiver } from "./session-calls";

/**
 * The most input bytes a member's call may carry over its session: each shard is one chunk,
 * and the worker takes at most 4 MiB in one; a larger call goes by ExecuteSharded.
 */
export const SESSION_MAX_INPUT_BYTES = 1 << 20;

/** A member as a session call needs it: its session, its handle of the program, a reload. */
export interface SessionMember {
  session: MemberSession;
  digest: Uint8Array;
  /** Loads the program again (the worker answered NOT_FOUND) and gives the new handle. */
  reload(): Promise<Uint8Array>;
}

/** What one group call over sessions shares: its deadline, its name, its cancellation. */
export interface SessionCallOptions {
  /** When the call's time is up, as Date.now() counts. */
  deadline: number;
  /** The call's deadline as it was given, for the message of a member out of time. */
  deadlineMs: number;
  /** The call's name on every member of the job. */
  jobCallId: string;
  /** Aborted when the call must stop on every member (one failed, or the caller cancelled). */
  cancel: AbortSignal;
  onProgress?: (member: number, progress: ShardedProgress) => void;
}

/**
 * One call of a WorkerGroup over its members' sessions: each member is sent one message (the
 * start, its input shards read from the caller's arrays, the call's time left and name) on
 * the stream it keeps open, and answers with one, whose shards land in the shared outputs
 * (GroupCall, which gives the call's result once all have ended). One timer keeps the
 * deadline and one listener the cancellation for every member, so a call costs each member
 * its two messages and little else. Gives a promise per member that settles when its answer
 * has ended, for settleMembers.
 */
export function callSessions(
  members: readonly SessionMember[],
  program: GroupProgram,
  version: number,
  checked: CheckedCall,
  call: GroupCall,
  options: SessionCallOptions,
): Promise<void>[] {
  const calls: MemberCall[] = [];
  let left = members.length;
  const ended = () => {
    if (--left > 0) return;
    clearTimeout(timer);
    options.cancel.removeEventListener("abort", onCancel);
  };
  const stopAll = (code: status, detail: string) => {
    for (const c of calls) c.stop(code, detail);
  };
  const onCancel = () => stopAll(status.CANCELLED, "the group call was cancelled");
  const timer = setTimeout(
    () =>
      stopAll(
        status.DEADLINE_EXCEEDED,
        `the deadline passed (no answer within ${options.deadlineMs} ms)`,
      ),
    Math.max(0, options.deadline - Date.now()),
  );
  options.cancel.addEventListener("abort", onCancel, { once: true });
  const tail = callTail(Math.max(1, options.deadline - Date.now()), options.jobCallId);
  const promises = members.map(
    (member, i) =>
      new Promise<void>((resolve, reject) => {
        const memberCall = new MemberCall(
          member,
          i,
          program,
          version,
          checked,
          call,
          tail,
          options,
        );
        memberCall.settle = (error) => {
          ended();
          if (error === undefined) resolve();
          else reject(error);
        };
        calls.push(memberCall);
      }),
  );
  for (const c of calls) c.send(c.member.digest);
  if (options.cancel.aborted) onCancel();
  return promises;
}

/** One member's part of a group call: what it sends, and its answer as it arrives. */
class MemberCall implements SessionReceiver {
  settle: (error: Error | undefined) => void = () => {};
  private id = 0;
  private done = false;
  private reloaded = false;
  /** The answer as it arrives: made with its first part, so a call in flight holds little. */
  private outputs: ShardedOutputs | undefined;

  constructor(
    readonly member: SessionMember,
    private readonly index: number,
    private readonly program: GroupProgram,
    private readonly version: number,
    private readonly checked: CheckedCall,
    private readonly call: GroupCall,
    /** The fields every member's call shares (callTail). */
    private tail: Uint8Array,
    private readonly options: SessionCallOptions,
  ) {}

  /** Sends the call, naming the program by `digest`. */
  send(digest: Uint8Array): void {
    const template = this.program.sessionCall(this.index, digest);
    const { globals } = this.checked;
    this.id = this.member.session.send((id) => template.message(id, globals, this.tail), this);
  }

  part(part: SessionPart): void {
    if (this.done) return;
    try {
      if (part.status !== undefined) {
        this.failed(part.status.code, part.status.message);
        return;
      }
      this.outputs ??= new ShardedOutputs(
        this.version,
        this.call.scope(this.index),
        this.checked.into,
      );
      const outputs = this.outputs;
      if (part.outputSpecs !== undefined) outputs.specs(part.outputSpecs);
      for (const chunk of part.outputs) outputs.chunk(chunk);
      if (!part.end) return;
      outputs.end();
      this.options.onProgress?.(this.index, {
        sentBytes: this.program.inputBytes[this.index],
        receivedBytes: outputs.receivedBytes,
      });
      this.finish(undefined);
    } catch (error) {
      this.member.session.cancel(this.id);
      this.finish(error as Error);
    }
  }

  fail(error: WorkerError): void {
    this.finish(error);
  }

  /** Ends the call here with `code` (cancelled, or out of time), and on the worker. */
  stop(code: status, detail: string): void {
    if (this.done) return;
    this.member.session.cancel(this.id);
    this.finish(new WorkerError(code, detail, this.said(`${status[code]}: ${detail}`)));
  }

  /** The worker's status: NOT_FOUND loads the program again once and calls again. */
  private failed(code: status, message: string): void {
    if (code === status.NOT_FOUND && !this.reloaded) {
      this.reloaded = true;
      this.member.reload().then(
        (digest) => {
          if (this.done) return;
          const { deadline, jobCallId } = this.options;
          this.tail = callTail(Math.max(1, deadline - Date.now()), jobCallId);
          this.send(digest);
        },
        (error: Error) => this.finish(error),
      );
      return;
    }
    this.finish(new WorkerError(code, message, this.said(`${status[code]}: ${message}`)));
  }

  private finish(error: Error | undefined): void {
    if (this.done) return;
    this.done = true;
    this.outputs = undefined; // its shards are in the group's buffers
    this.settle(error);
  }

  private said(detail: string): string {
    return `the call over the session to ${this.member.session.target} failed: ${detail}`;
  }
}
