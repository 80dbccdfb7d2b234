import { type CallOptions, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { WorkerError } from "../errors";

/** A generated client method in its (request, metadata, options, callback) form. */
export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => { cancel(): void };

/** Where a call goes, for error messages, how long it may take, and what cancels it. */
export interface CallTarget {
  target: string;
  method: string;
  deadlineMs: number;
  /** When the deadline falls (Date.now() ms): `deadlineMs` from now unless a queue began it. */
  deadline?: number;
  signal?: AbortSignal;
}

/** Makes one unary call that settles by its deadline or its abort; any failure is a WorkerError. */
export function callUnary<Req, Res>(
  method: UnaryMethod<Req, Res>,
  request: Req,
  call: CallTarget,
): Promise<Res> {
  checkDeadline(call.deadlineMs);
  const options = { deadline: call.deadline ?? Date.now() + call.deadlineMs };
  return new Promise((resolve, reject) => {
    const signal = call.signal;
    const cancel = () => pending.cancel();
    const pending = method(request, new Metadata(), options, (error, response) => {
      signal?.removeEventListener("abort", cancel);
      if (error) reject(workerError(error, call));
      else resolve(response);
    });
    if (signal?.aborted) cancel();
    else signal?.addEventListener("abort", cancel, { once: true });
  });
}

/** Throws unless the deadline is a positive, finite number of milliseconds. */
export function checkDeadline(deadlineMs: number): void {
  if (!(deadlineMs > 0 && Number.isFinite(deadlineMs))) {
    throw new RangeError(`a deadline is a positive number of milliseconds, not ${deadlineMs}`);
  }
}

function workerError(error: ServiceError, call: CallTarget): WorkerError {
  return callFailed(error.code, error.details || error.message, call);
}

/** The WorkerError of a call that failed with `code`: where it went, the details, a hint. */
export function callFailed(code: status, details: string, call: CallTarget): WorkerError {
  const where = `${call.method} on ${call.target}`;
  const hint =
    code === status.UNAVAILABLE && !details.includes("shutting down")
      ? " (the worker is unreachable, or died during the call)"
      : code === status.DEADLINE_EXCEEDED
        ? ` (no answer within ${call.deadlineMs} ms)`
        : code === status.CANCELLED && call.signal?.aborted
          ? " (the caller aborted it)"
          : "";
  return new WorkerError(code, details, `${where} failed: ${status[code]}: ${details}${hint}`);
}
