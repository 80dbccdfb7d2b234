import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { type Client, status } from "@grpc/grpc-js";
import { ColocatedWorkerServiceService } from "../../../gen/ts/colocated/v1/service";
import { DecodeError } from "../../errors";
import { WorkerError } from "../errors";
import { addRelayedMessage, childrenMessage } from "../messages/relay-request";
import { readRelayResponse } from "../messages/relay-response";
import { cancelMessage } from "../messages/session-request";
import { type MemberSession, SessionCalls, type SessionReceiver } from "./session-calls";
import { type Stream, WorkerStream } from "./worker-stream";

const RELAY = ColocatedWorkerServiceService.relay.path;

/**
 * A controller's Relay stream to one member, carrying the sessions of the members it relays
 * for (its children, itself first): the controller keeps one connection's state per relay
 * instead of one per member, which is what a member's call costs at a thousand members
 * (docs/multi-worker.md). Each child is a RelayedSession, a MemberSession as a group call
 * uses it. The messages written in one turn of the event loop go in one RelayRequest; the
 * relay's answers are routed to each child's calls. A child's session that ends fails its
 * calls, and the child's next call opens its next one; a relay stream that breaks fails
 * every child's calls, and the next call opens another.
 */
export class RelayStream extends WorkerStream {
  private batch: BinaryWriter | undefined;
  private closed = false;
  /** The children's sessions, in the order given. */
  readonly sessions: RelayedSession[];

  constructor(
    stub: Client,
    target: string,
    /** host:port of each child, as the relaying member reaches it. */
    private readonly children: readonly string[],
  ) {
    super(stub, target, RELAY, "Relay");
    this.sessions = children.map((child, i) => new RelayedSession(this, i, child));
  }

  /**
   * Opens the stream, and settles once the relaying worker has taken it and every child's
   * worker has taken the session the relay opened for it (a WorkerError, the first child's
   * that failed, when one did not: `refused` on that child when it refused), or `deadlineMs`
   * has passed (DEADLINE_EXCEEDED).
   */
  override async whenTaken(deadlineMs: number): Promise<void> {
    const until = Date.now() + deadlineMs;
    await super.whenTaken(deadlineMs);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          const waiting = this.sessions.find((s) => !s.wasTaken) ?? this.sessions[0];
          const detail = `the worker did not take the session within ${deadlineMs} ms`;
          reject(waiting.failure(status.DEADLINE_EXCEEDED, detail));
        },
        Math.max(1, until - Date.now()),
      );
    });
    try {
      await Promise.race([Promise.all(this.sessions.map((s) => s.firstTaken)), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Queues one SessionRequest to a child's session `number`, sent at the end of this turn. */
  write(child: number, number: number, message: Uint8Array): void {
    if (this.stream === undefined) this.openStream();
    if (this.batch === undefined) {
      this.batch = new BinaryWriter();
      process.nextTick(() => this.flush());
    }
    addRelayedMessage(this.batch, child, number, message);
  }

  /** Ends the stream: the relay half-closes its children's sessions, their answers still come. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.flush();
    this.stream?.end();
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = undefined;
    if (batch !== undefined) this.stream?.write(batch.finish());
  }

  /** A new stream, its first message naming the children. */
  protected override openStream(): Stream {
    this.flush(); // a batch meant for a stream that broke: its calls have failed
    const stream = super.openStream();
    stream.write(childrenMessage(this.children));
    return stream;
  }

  /** One RelayResponse: each child's answers to its calls, and the ends of its sessions. */
  protected received(bytes: Uint8Array): void {
    readRelayResponse(bytes, {
      message: (child, number, message) => this.child(child).received(number, message),
      end: (child, number, code, details) => this.child(child).ended(number, code, details),
      taken: (child, number) => this.child(child).taken(number),
    });
  }

  private child(child: number): RelayedSession {
    const session = this.sessions[child];
    if (session === undefined) {
      const detail = `an answer from child ${child}, of ${this.sessions.length}`;
      throw new DecodeError("messages.child", "invalid-value", detail);
    }
    return session;
  }

  /** Every child's open calls fail with the stream's error; the next call opens another. */
  protected ended(error: WorkerError): void {
    for (const session of this.sessions) session.relayBroken(error);
  }
}

/**
 * One child's session, carried by its relay's stream. Its sessions are numbered: a message
 * names the one it belongs to, the relay opens the next one when a message names it, and an
 * end or an answer naming one before the current is of a session already over here.
 */
export class RelayedSession implements MemberSession {
  private readonly open = new SessionCalls();
  /** The child's current session on the relay. */
  private number = 0;
  /** Whether the current session has answered anything (else an end may be a refusal). */
  private answered = false;
  /** Settles once the child's first session is taken (its end's error if it never was). */
  readonly firstTaken: Promise<void>;
  private settleFirst: (error?: WorkerError) => void = () => {};
  /** Whether the child's first session was taken. */
  wasTaken = false;
  refused = false;
  /** Whether the relay could not reach the child, or found it not of its job, at its first session. */
  unreached = false;
  streams = 1;

  constructor(
    private readonly relay: RelayStream,
    private readonly child: number,
    readonly target: string,
  ) {
    this.firstTaken = new Promise<void>((resolve, reject) => {
      this.settleFirst = (error) => (error ? reject(error) : resolve());
    });
    this.firstTaken.catch(() => {}); // awaited by whenTaken() alone, and only at connect
  }

  /** The child's worker took its session `number`. */
  taken(number: number): void {
    if (number !== 0) return;
    this.wasTaken = true;
    this.settleFirst();
  }

  get calls(): number {
    return this.open.count;
  }

  whenTaken(deadlineMs: number): Promise<void> {
    return this.relay.whenTaken(deadlineMs);
  }

  send(message: (id: number) => Uint8Array, receiver: SessionReceiver): number {
    const id = this.open.add(receiver);
    this.relay.write(this.child, this.number, message(id));
    return id;
  }

  cancel(id: number): void {
    if (this.open.delete(id)) this.relay.write(this.child, this.number, cancelMessage(id));
  }

  close(): void {
    this.relay.close();
  }

  /** A SessionResponse from the child's session `number`. */
  received(number: number, bytes: Uint8Array): void {
    if (number !== this.number) return;
    this.answered = true;
    try {
      this.open.route(bytes);
    } catch (error) {
      this.ended(number, status.INTERNAL, (error as Error).message);
    }
  }

  /** The child's session `number` ended with a status: its calls fail, the next call opens another. */
  ended(number: number, code: status, details: string): void {
    if (number !== this.number) return;
    if (!this.answered && (code === status.RESOURCE_EXHAUSTED || code === status.UNIMPLEMENTED)) {
      this.refused = true;
    }
    if (!this.wasTaken && (code === status.UNAVAILABLE || code === status.FAILED_PRECONDITION)) {
      this.unreached = true;
    }
    if (code === status.OK) [code, details] = [status.UNAVAILABLE, "the worker ended the session"];
    this.next(this.failure(code, details));
  }

  /** The relay's stream broke: the calls it carried fail with its error. */
  relayBroken(error: WorkerError): void {
    this.next(error);
  }

  /** How the child's session failed, naming the child and its relay. */
  failure(code: status, details: string): WorkerError {
    const message = `Session on ${this.target} (by the relay on ${this.relay.target}) failed: ${status[code]}: ${details}`;
    return new WorkerError(code, details, message);
  }

  private next(error: WorkerError): void {
    this.settleFirst(error); // nothing once it was taken
    this.number += 1;
    this.streams += 1;
    this.answered = false;
    this.open.failAll(error);
  }
}
