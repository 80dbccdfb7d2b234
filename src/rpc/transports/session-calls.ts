import { DecodeError } from "../../errors";
import type { WorkerError } from "../errors";
import { readSessionResponse, type SessionPart } from "../messages/session-response";

/** Where a call's answer goes: each part as it comes, or the failure that ends it. */
export interface SessionReceiver {
  /** One part of the answer; the last one is marked `end` or carries a status. */
  part(part: SessionPart): void;
  /** The session broke before the call's answer ended. */
  fail(error: WorkerError): void;
}

/** A member's session as a group call uses it: a Session, or one carried by a relay. */
export interface MemberSession {
  /** host:port of the member's worker. */
  readonly target: string;
  /** Whether the member (or its relay) refused the stream before taking it. */
  readonly refused: boolean;
  /** Calls sent, over every stream. */
  readonly calls: number;
  /** Streams opened. */
  readonly streams: number;
  /** Settles once the stream is taken (a WorkerError if refused or out of time). */
  whenTaken(deadlineMs: number): Promise<void>;
  /** Sends a call (`message(id)`: its SessionRequest bytes) and returns its id. */
  send(message: (id: number) => Uint8Array, receiver: SessionReceiver): number;
  /** Stops call `id` on the worker and forgets its answer; nothing if it has ended. */
  cancel(id: number): void;
  close(): void;
}

/**
 * The calls open on one member's session and the routing of its answers to them, by id:
 * what a Session and a session carried by a relay share. The output specs "as before" in an
 * answer are the last ones this stream sent, so a new stream starts without any.
 */
export class SessionCalls {
  private readonly open = new Map<number, SessionReceiver>();
  private lastId = 0;
  private lastSpecs: Uint8Array | undefined;
  /** Calls added, over every stream. */
  count = 0;

  /** Keeps `receiver` for a new call and gives its id. */
  add(receiver: SessionReceiver): number {
    const id = ++this.lastId;
    this.count += 1;
    this.open.set(id, receiver);
    return id;
  }

  /** Forgets call `id`; whether it was open. */
  delete(id: number): boolean {
    return this.open.delete(id);
  }

  /**
   * Reads one SessionResponse and gives it to the call it answers, unless that call was
   * cancelled here. Throws DecodeError when the bytes are not one (the stream is then broken).
   */
  route(bytes: Uint8Array): void {
    const part = readSessionResponse(bytes);
    // Kept whichever call they answer, a cancelled one too: the worker counts them sent.
    if (part.outputSpecs !== undefined) this.lastSpecs = part.outputSpecs.slice();
    else if (part.outputSpecsAsBefore) part.outputSpecs = this.specsAsBefore();
    const receiver = this.open.get(part.id);
    if (receiver === undefined) return; // a call cancelled, or timed out, here
    if (part.end || part.status !== undefined) this.open.delete(part.id);
    receiver.part(part);
  }

  /** The stream ended: every open call fails with `error`, and the next stream starts afresh. */
  failAll(error: WorkerError): void {
    this.lastSpecs = undefined;
    const open = [...this.open.values()];
    this.open.clear();
    for (const receiver of open) receiver.fail(error);
  }

  /** The last output specs, for an answer that says they are as before (DecodeError if none came). */
  private specsAsBefore(): Uint8Array {
    if (this.lastSpecs === undefined) {
      const detail = "output specs as before, but the session sent none before";
      throw new DecodeError("output_specs_as_before", "invalid-value", detail);
    }
    return this.lastSpecs;
  }
}
