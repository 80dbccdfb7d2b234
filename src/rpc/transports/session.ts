import type { Client } from "@grpc/grpc-js";
import { ColocatedWorkerServiceService } from "../../../gen/ts/colocated/v1/service";
import type { WorkerError } from "../errors";
import { cancelMessage } from "../messages/session-request";
import { type MemberSession, SessionCalls, type SessionReceiver } from "./session-calls";
import { WorkerStream } from "./worker-stream";

const SESSION = ColocatedWorkerServiceService.session.path;

/**
 * One worker's Session stream: opened at the first call and kept for every later one, so a
 * call costs the worker one message each way rather than a stream of its own (what a
 * WorkerGroup of a thousand members needs: src/rpc/transports/call-sessions.ts). Answers are
 * routed to their calls by id. When the stream breaks (the worker died, drained or sent what
 * is not a SessionResponse), every call still open on it fails, and the next call opens a
 * new one. Small messages are written without waiting for the stream to drain: a group has
 * one call in flight, so at most one message waits per member. A worker that refuses the
 * stream (`refused`) is called with ExecuteSharded instead.
 */
export class Session extends WorkerStream implements MemberSession {
  private readonly open = new SessionCalls();

  constructor(stub: Client, target: string) {
    super(stub, target, SESSION, "Session");
  }

  /** Sends a call (`message(id)`: its SessionRequest bytes) and returns its id. */
  send(message: (id: number) => Uint8Array, receiver: SessionReceiver): number {
    const stream = this.stream ?? this.openStream();
    const id = this.open.add(receiver);
    stream.write(message(id));
    return id;
  }

  /** Calls sent on this session, over every stream it opened. */
  get calls(): number {
    return this.open.count;
  }

  /** Stops call `id` on the worker and forgets its answer; nothing if it has ended. */
  cancel(id: number): void {
    if (this.open.delete(id)) this.stream?.write(cancelMessage(id));
  }

  /** Ends the stream: the worker finishes the calls it has, and their answers still come. */
  close(): void {
    this.stream?.end();
  }

  /** One SessionResponse, to the call it answers. */
  protected received(bytes: Uint8Array): void {
    this.open.route(bytes);
  }

  /** Every call still open fails with the stream's error. */
  protected ended(error: WorkerError): void {
    this.open.failAll(error);
  }
}
