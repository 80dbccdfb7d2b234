import { type CallOptions, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { WorkerError } from "./errors";

/** A generated client method in its (request, metadata, options, callback) form. */
type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

/** Where a call goes, for error messages, and how long it may take. */
export interface CallTarget {
  target: string;
  method: string;
  deadlineMs: number;
}

/** Makes one unary call that settles by its deadline; any failure is a WorkerError. */
export function callUnary<Req, Res>(
  method: UnaryMethod<Req, Res>,
  request: Req,
  call: CallTarget,
): Promise<Res> {
  checkDeadline(call.deadlineMs);
  const options = { deadline: Date.now() + call.deadlineMs };
  return new Promise((resolve, reject) => {
    method(request, new Metadata(), options, (error, response) => {
      if (error) reject(workerError(error, call));
      else resolve(response);
    });
  });
}

/** Throws unless the deadline is a positive, finite number of milliseconds. */
export function checkDeadline(deadlineMs: number): void {
  if (!(deadlineMs > 0 && Number.isFinite(deadlineMs))) {
    throw new RangeError(`a deadline is a positive number of milliseconds, not ${deadlineMs}`);
  }
}

function workerError(error: ServiceError, call: CallTarget): WorkerError {
  const details = error.details || error.message;
  const where = `${call.method} on ${call.target}`;
  const hint =
    error.code === status.UNAVAILABLE
      ? " (the worker is unreachable, or died during the call)"
      : error.code === status.DEADLINE_EXCEEDED
        ? ` (no answer within ${call.deadlineMs} ms)`
        : "";
  return new WorkerError(
    error.code,
    details,
    `${where} failed: ${status[error.code]}: ${details}${hint}`,
  );
}
