import { type Client, type ClientDuplexStream, type ServiceError, status } from "@grpc/grpc-js";
import { WorkerError } from "../errors";

export type Stream = ClientDuplexStream<Uint8Array, Uint8Array>;

const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** A plain Uint8Array: the views read from it (each chunk's data) cost less than a Buffer's. */
const asView = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/**
 * A long-lived bidi stream of bytes to one worker, opened when first needed and again after
 * one broke: what a Session and a Relay share. It knows whether the worker took the stream
 * (its headers came) or refused it before taking it.
 */
export abstract class WorkerStream {
  protected stream: Stream | undefined;
  /** Streams opened: the first, and one after each that broke. */
  streams = 0;
  /**
   * Whether the worker refused a stream before taking it (RESOURCE_EXHAUSTED: its
   * --max-sessions are taken; UNIMPLEMENTED: it serves none): the caller goes without.
   */
  refused = false;
  /** Whether the current stream's headers came: the worker took it. */
  private taken = false;

  constructor(
    private readonly stub: Client,
    /** host:port of the worker. */
    readonly target: string,
    /** The method's path. */
    private readonly path: string,
    /** What it is, for its errors: "Session" or "Relay". */
    private readonly kind: string,
  ) {}

  /**
   * Opens the stream, and settles once the worker has taken it (its headers) or refused it
   * (a WorkerError), or `deadlineMs` has passed (DEADLINE_EXCEEDED).
   */
  whenTaken(deadlineMs: number): Promise<void> {
    const stream = this.stream ?? this.openStream();
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
        const detail = `the worker did not take the ${this.kind} within ${deadlineMs} ms`;
        done(this.failure(status.DEADLINE_EXCEEDED, detail));
      }, deadlineMs);
      stream.on("metadata", onHeaders);
      stream.on("status", onStatus);
    });
  }

  /** A new stream, its events wired to received() and ended(). */
  protected openStream(): Stream {
    const stream = this.stub.makeBidiStreamRequest(this.path, asBuffer, asView);
    this.stream = stream;
    this.streams += 1;
    this.taken = false;
    stream.on("metadata", () => {
      if (this.stream === stream) this.taken = true;
    });
    stream.on("data", (bytes: Uint8Array) => {
      try {
        this.received(bytes);
      } catch (error) {
        this.over(stream, this.failure(status.INTERNAL, (error as Error).message));
        stream.cancel();
      }
    });
    stream.on("error", ({ code, details, message }: ServiceError) => {
      const untaken = this.stream === stream && !this.taken;
      if (untaken && (code === status.RESOURCE_EXHAUSTED || code === status.UNIMPLEMENTED)) {
        this.refused = true;
      }
      this.over(stream, this.failure(code, details || message));
    });
    stream.on("end", () => this.over(stream, this.failure(status.OK, "")));
    return stream;
  }

  /** One message from the worker; what it throws breaks the stream (INTERNAL). */
  protected abstract received(bytes: Uint8Array): void;

  /** The current stream is over, with `error`; the next use opens another. */
  protected abstract ended(error: WorkerError): void;

  private over(stream: Stream, error: WorkerError): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    this.ended(error);
  }

  /** How the stream failed, as its calls report it; an end without error is UNAVAILABLE. */
  private failure(code: status, details: string): WorkerError {
    if (code === status.OK) {
      [code, details] = [status.UNAVAILABLE, `the worker ended the ${this.kind.toLowerCase()}`];
    }
    return new WorkerError(
      code,
      details,
      `${this.kind} on ${this.target} failed: ${status[code]}: ${details}`,
    );
  }
}
