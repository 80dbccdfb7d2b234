import type { WorkerClient } from "../client/client";
import { callSharded } from "../sharded/sharded-call";
import type { MemberCalls, MemberTransport, TransportKind } from "./member-transport";

/**
 * Every member's call on a stream of its own (ExecuteSharded), within the member's queue for
 * its worker's limits: what every worker serves, and what carries calls too large for a
 * session.
 */
export class StreamsTransport implements MemberTransport {
  readonly name = "streams";
  readonly broken = false;
  readonly relays = 0;
  readonly counts = { calls: 0, streams: 0 };

  constructor(
    private readonly clients: readonly WorkerClient[],
    private readonly version: number,
  ) {}

  carries(): boolean {
    return true;
  }

  call(calls: MemberCalls): Promise<unknown>[] {
    const { program, checked, call, callId, deadline, cancel, onProgress } = calls;
    const specs = program.program.inputs.leaves;
    return this.clients.map((client, i) =>
      client.withHandle(
        program.sent,
        program.inputBytes[i],
        { deadlineMs: Math.max(1, deadline - Date.now()), signal: cancel },
        (target, digest, deadlineMs) =>
          callSharded(target, this.version, program.start(digest), specs, checked, {
            deadlineMs,
            signal: cancel,
            callId,
            scope: call.scope(i),
            onProgress: onProgress && ((p) => onProgress(i, p)),
          }),
      ),
    );
  }

  close(): void {}
}

/** Streams: always open, as every worker serves ExecuteSharded. */
export const streams: TransportKind = {
  name: "streams",
  open: async (clients, version) => new StreamsTransport(clients, version),
};
