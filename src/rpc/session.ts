import { type Client, type ClientDuplexStream, type ServiceError, status } from "@grpc/grpc-js";
import { DecodeError } from "../errors";
import { WorkerError } from "./errors";
import { cancelMessage } from "./session-request";
import { readSessionResponse, type SessionPart } from "./session-response";

const SESSION = "/colocated.v1.ColocatedWorkerService/Session";
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** A plain Uint8Array: the views read from it (each chunk's data) cost less than a Buffer's. */
const asView = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

type Stream = ClientDuplexStream<Uint8Array, Uint8Array>;

/** Where a call's answer goes: each part as it comes, or the failure that ends it. */
export interface SessionReceiver {
  /** One part of the answer; the last one is marked `end` or carries a status. */
  part(part: SessionPart): void;
  /** The session broke before the call's answer ended. */
  fail(error: WorkerError): void;
}

/**
 * One worker's Session stream: opened at the first call and kept for every later one, so a
 * call costs the worker one message each way rather than a stream of its own (what a
 * WorkerGroup of a thousand members needs: src/rpc/group-session-call.ts). Answers are
 * routed to their calls by id. When the stream breaks (the worker died, drained or sent what
 * is not a SessionResponse), every call still open on it fails, and the next call opens a
 * new one. Small messages are written without waiting for the stream to drain: a group has
 * one call in flight, so at most one message waits per member.
 */
export class Session {
  private stream: Stream | undefined;
  private readonly open = new Map<number, SessionReceiver>();
  private lastId = 0;
  /** Calls sent on this session, over every stream it opened. */
  calls = 0;
  /** Streams opened: the first, and one after each that broke. */
  streams = 0;
  /**
   * Whether the worker refused a stream before taking it (RESOURCE_EXHAUSTED: it serves as
   * many sessions as its --max-sessions; UNIMPLEMENTED: none): use ExecuteSharded instead.
   */
  refused = false;
  /** Whether the current stream's headers came: the worker took it. */
  private taken = false;
  /** The output specs the current stream sent last (a copy): what "as before" means. */
  private lastSpecs: Uint8Array | undefined;

  constructor(
    private readonly stub: Client,
    /** host:port of the worker. */
    readonly target: string,
  ) {}

  /**
   * Opens the stream, and settles once the worker has taken it (its headers) or refused it
   * (a WorkerError), or `deadlineMs` has passed (DEADLINE_EXCEEDED).
   */
  accepted(deadlineMs: number): Promise<void> {
    const stream = this.stream ?? this.start();
    if (this.taken) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (error?: WorkerError) => {
        clearTimeout(timer);
        stream.off("metadata", onHeaders);
        stream.off("status", onStatus);
        if (error) reject(error);
        else resolve();
      };
      const onHeaders = () => done();
      const onStatus = ({ code, details }: { code: status; details: string }) =>
        done(this.failure(code, details));
      const timer = setTimeout(() => {
        const detail = `the worker did not take the session within ${deadlineMs} ms`;
        done(this.failure(status.DEADLINE_EXCEEDED, detail));
      }, deadlineMs);
      stream.on("metadata", onHeaders);
      stream.on("status", onStatus);
    });
  }

  /** Sends a call (`message(id)`: its SessionRequest bytes) and returns its id. */
  send(message: (id: number) => Uint8Array, receiver: SessionReceiver): number {
    const stream = this.stream ?? this.start();
    const id = ++this.lastId;
    this.calls += 1;
    this.open.set(id, receiver);
    stream.write(message(id));
    return id;
  }

  /** Stops call `id` on the worker and forgets its answer; nothing if it has ended. */
  cancel(id: number): void {
    if (this.open.delete(id)) this.stream?.write(cancelMessage(id));
  }

  /** How many calls wait for their answer. */
  get openCalls(): number {
    return this.open.size;
  }

  /** Ends the stream: the worker finishes the calls it has, and their answers still come. */
  close(): void {
    this.stream?.end();
  }

  private start(): Stream {
    const stream = this.stub.makeBidiStreamRequest(SESSION, asBuffer, asView);
    this.stream = stream;
    this.streams += 1;
    this.taken = false;
    this.lastSpecs = undefined;
    stream.on("metadata", () => {
      if (this.stream === stream) this.taken = true;
    });
    stream.on("data", (bytes: Uint8Array) => this.received(stream, bytes));
    stream.on("error", ({ code, details, message }: ServiceError) => {
      const untaken = this.stream === stream && !this.taken;
      if (untaken && (code === status.RESOURCE_EXHAUSTED || code === status.UNIMPLEMENTED)) {
        this.refused = true;
      }
      this.broken(stream, this.failure(code, details || message));
    });
    stream.on("end", () => this.broken(stream, this.failure(status.OK, "")));
    return stream;
  }

  /** One SessionResponse: to the call it answers, unless that call was cancelled here. */
  private received(stream: Stream, bytes: Uint8Array): void {
    let part: SessionPart;
    try {
      part = readSessionResponse(bytes);
      // Kept whichever call they answer, a cancelled one too: the worker counts them sent.
      if (part.outputSpecs !== undefined) this.lastSpecs = part.outputSpecs.slice();
      else if (part.outputSpecsAsBefore) part.outputSpecs = this.specsAsBefore();
    } catch (error) {
      this.broken(stream, this.failure(status.INTERNAL, (error as Error).message));
      stream.cancel();
      return;
    }
    const receiver = this.open.get(part.id);
    if (receiver === undefined) return; // a call cancelled, or timed out, here
    if (part.end || part.status !== undefined) this.open.delete(part.id);
    receiver.part(part);
  }

  /** The last output specs, for an answer that says they are as before (DecodeError if none came). */
  private specsAsBefore(): Uint8Array {
    if (this.lastSpecs === undefined) {
      const detail = "output specs as before, but the session sent none before";
      throw new DecodeError("output_specs_as_before", "invalid-value", detail);
    }
    return this.lastSpecs;
  }

  /** The stream is over: its open calls fail with `error`, and the next call opens another. */
  private broken(stream: Stream, error: WorkerError): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    const open = [...this.open.values()];
    this.open.clear();
    for (const receiver of open) receiver.fail(error);
  }

  /** How the session failed, as its calls report it; an end without error is UNAVAILABLE. */
  private failure(code: status, details: string): WorkerError {
    if (code === status.OK) [code, details] = [status.UNAVAILABLE, "the worker ended the session"];
    return new WorkerError(
      code,
      details,
      `Session on ${this.target} failed: ${status[code]}: ${details}`,
    );
  }
}
