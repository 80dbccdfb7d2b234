import { status } from "@grpc/grpc-js";

/** A call to a worker failed: the gRPC status code, and what the worker (or the channel) said. */
export class WorkerError extends Error {
  override readonly name: string = "WorkerError";

  constructor(
    /** The gRPC status code, such as `status.PERMISSION_DENIED`. */
    readonly code: status,
    /** The status details: the worker's own message, or the channel's. */
    readonly details: string,
    message = `${status[code] ?? `status ${code}`}: ${details}`,
  ) {
    super(message);
  }

  /** The status code's name, such as "PERMISSION_DENIED". */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }
}

/** The client and the worker have no colocated.v1 version in common. */
export class VersionMismatchError extends WorkerError {
  override readonly name: string = "VersionMismatchError";

  constructor(details: string) {
    super(status.FAILED_PRECONDITION, details, details);
  }
}
