import type { WorkerClient } from "../client/client";
import type { GroupProgram } from "../group/group-program";
import { callSessions, SESSION_MAX_INPUT_BYTES } from "./call-sessions";
import type {
  MemberCalls,
  MemberTransport,
  TransportKind,
  TransportName,
} from "./member-transport";
import type { MemberSession } from "./session-calls";

/**
 * Every member's call as one message on a Session stream the member keeps open (direct, or
 * carried by a relay): for calls whose inputs are at most SESSION_MAX_INPUT_BYTES a member.
 */
export class SessionsTransport implements MemberTransport {
  constructor(
    readonly name: TransportName,
    private readonly clients: readonly WorkerClient[],
    private readonly version: number,
    /** Each member's session, in the members' order. */
    private readonly sessions: readonly MemberSession[],
    readonly relays: number,
  ) {}

  carries(program: GroupProgram): boolean {
    return program.maxInputBytes <= SESSION_MAX_INPUT_BYTES;
  }

  call(calls: MemberCalls): Promise<unknown>[] {
    const members = this.sessions.map((session, i) => ({
      session,
      digest: calls.digests[i],
      reload: () => this.clients[i].reloadSent(calls.program.sent),
    }));
    return callSessions(members, calls.program, this.version, calls.checked, calls.call, {
      deadline: calls.deadline,
      deadlineMs: calls.deadlineMs,
      jobCallId: calls.callId,
      cancel: calls.cancel,
      onProgress: calls.onProgress,
    });
  }

  /** A member that refused to open another session (a broken one's) serves no more calls. */
  get broken(): boolean {
    return this.sessions.some((s) => s.refused);
  }

  get counts(): { calls: number; streams: number } {
    return {
      calls: this.sessions.reduce((n, s) => n + s.calls, 0),
      streams: this.sessions.reduce((n, s) => n + s.streams, 0),
    };
  }

  close(): void {
    for (const s of this.sessions) s.close();
  }
}

/**
 * A Session from the controller to each member, open and taken by its worker; none when the
 * options say `sessions: false`, a member does not serve them, or one refuses (it serves as
 * many as its --max-sessions).
 */
export const sessions: TransportKind = {
  name: "sessions",
  async open(clients, version, options, deadlineMs) {
    if (options.sessions === false || !clients.every((c) => c.servesSessions)) return undefined;
    const opened = clients.map((c) => c.openSession());
    const taken = await Promise.allSettled(opened.map((s) => s.whenTaken(deadlineMs)));
    const failed = taken.find((t) => t.status === "rejected");
    if (failed === undefined) return new SessionsTransport("sessions", clients, version, opened, 0);
    for (const s of opened) s.close();
    if (opened.some((s) => s.refused)) return undefined;
    throw failed.reason;
  },
};
