import { status } from "@grpc/grpc-js";
import type { WorkerLimits as WorkerLimitsMessage } from "../../../gen/ts/colocated/v1/service";
import type { WorkerError } from "../errors";
import { type CallTarget, callFailed, checkDeadline } from "./unary";

/** How many calls may wait in a client's queue unless `maxQueuedCalls` says otherwise. */
export const DEFAULT_MAX_QUEUED_CALLS = 1024;

/** setTimeout's longest delay; a deadline further off than this waits without a timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How much a worker takes on at once, as its GetVersion answer states it (its
 * `--max-concurrent-calls` and `--max-inflight-bytes`); 0 is no limit. Only Execute,
 * LoadProgram and ExecuteSharded count.
 */
export interface WorkerLimits {
  maxConcurrentCalls: number;
  maxInflightBytes: number;
}

/** Options of the queue a client keeps for the calls beyond the worker's limits. */
export interface QueueOptions {
  /**
   * How many calls may wait at once (1024 by default; 0: none wait). One more fails at once
   * with RESOURCE_EXHAUSTED, never sent.
   */
  maxQueuedCalls?: number;
}

/** The limits of a GetVersion answer; undefined from a worker too old to state them. */
export function workerLimits(message: WorkerLimitsMessage | undefined): WorkerLimits | undefined {
  if (message === undefined) return undefined;
  return {
    maxConcurrentCalls: message.maxConcurrentCalls,
    maxInflightBytes: Number(message.maxInflightBytes),
  };
}

/** Throws RangeError unless `maxQueuedCalls` is absent or a non-negative integer. */
export function checkQueueOptions(options: QueueOptions): number {
  const bound = options.maxQueuedCalls ?? DEFAULT_MAX_QUEUED_CALLS;
  if (!(Number.isInteger(bound) && bound >= 0)) {
    throw new RangeError(`maxQueuedCalls is a non-negative integer, not ${bound}`);
  }
  return bound;
}

/** A call waiting for its turn: what it will hold, and how to let it go. */
interface Waiting {
  bytes: number;
  admit(): void;
}

/**
 * The calls of one client to one worker, kept within the worker's limits: at most its
 * max_concurrent_calls in flight and its max_inflight_bytes of requests, so that the worker
 * never refuses this client's calls for load. Calls beyond wait here, first in first out (a
 * large call is not passed by smaller ones), their deadline and AbortSignal counting while
 * they wait; a call larger than the whole byte limit goes alone. Without limits (an older
 * worker), every call goes at once.
 */
export class CallQueue {
  private calls = 0;
  private bytes = 0;
  private readonly waiting: Waiting[] = [];
  private readonly maxCalls: number;
  private readonly maxBytes: number;

  constructor(
    /** The worker's limits; undefined: none. */
    readonly limits: WorkerLimits | undefined,
    /** How many calls may wait at once. */
    private readonly maxQueued: number = DEFAULT_MAX_QUEUED_CALLS,
  ) {
    this.maxCalls = limits?.maxConcurrentCalls || Number.POSITIVE_INFINITY;
    this.maxBytes = limits?.maxInflightBytes || Number.POSITIVE_INFINITY;
  }

  /** How many calls wait now. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `send` once the call fits in the worker's limits, counting it and its `bytes` of
   * request until it settles. `send` gets the milliseconds left of the call's deadline: all
   * of `call.deadlineMs` unless it waited. A call that waits past its deadline fails with
   * DEADLINE_EXCEEDED, an aborted one with CANCELLED, and one beyond a full queue with
   * RESOURCE_EXHAUSTED, each without ever being sent.
   */
  async run<T>(bytes: number, call: CallTarget, send: (leftMs: number) => Promise<T>): Promise<T> {
    checkDeadline(call.deadlineMs);
    if (this.limits === undefined) return send(call.deadlineMs);
    const held = Math.min(bytes, this.maxBytes); // larger than the limit: alone, then
    let leftMs = call.deadlineMs;
    if (this.waiting.length === 0 && this.fits(held)) {
      this.take(held);
    } else {
      const deadline = Date.now() + call.deadlineMs;
      await this.wait(held, call, deadline);
      leftMs = deadline - Date.now();
      if (leftMs <= 0) {
        this.give(held); // admitted as its timer was due: it was never sent
        throw this.refusal(status.DEADLINE_EXCEEDED, call);
      }
    }
    try {
      return await send(leftMs);
    } finally {
      this.give(held);
    }
  }

  private fits(bytes: number): boolean {
    return this.calls < this.maxCalls && this.bytes + bytes <= this.maxBytes;
  }

  private take(bytes: number): void {
    this.calls += 1;
    this.bytes += bytes;
  }

  private give(bytes: number): void {
    this.calls -= 1;
    this.bytes -= bytes;
    this.admitWaiting();
  }

  /** Lets the waiting calls go, in order, as long as the first of them fits. */
  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes)) {
      const next = this.waiting.shift() as Waiting;
      this.take(next.bytes);
      next.admit();
    }
  }

  /** Resolves once the call is admitted; rejects when it leaves the queue unsent. */
  private wait(bytes: number, call: CallTarget, deadline: number): Promise<void> {
    if (this.waiting.length >= this.maxQueued) {
      return Promise.reject(this.refusal(status.RESOURCE_EXHAUSTED, call));
    }
    const signal = call.signal;
    if (signal?.aborted) return Promise.reject(this.refusal(status.CANCELLED, call));
    return new Promise((resolve, reject) => {
      const leave = (code: status) => {
        stop();
        this.waiting.splice(this.waiting.indexOf(waiting), 1);
        this.admitWaiting(); // the first call may have left: the next ones may fit
        reject(this.refusal(code, call));
      };
      const onAbort = () => leave(status.CANCELLED);
      const delay = deadline - Date.now();
      const timer =
        delay <= MAX_TIMER_MS
          ? setTimeout(() => leave(status.DEADLINE_EXCEEDED), Math.max(delay, 0))
          : undefined;
      const stop = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const waiting: Waiting = {
        bytes,
        admit: () => {
          stop();
          resolve();
        },
      };
      this.waiting.push(waiting);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The error of a call that left the queue unsent. */
  private refusal(code: status, call: CallTarget): WorkerError {
    const limits = this.describeLimits();
    const details =
      code === status.RESOURCE_EXHAUSTED
        ? `this client's queue for the worker's limits (${limits}) is full: ${this.waiting.length} calls wait, its bound (maxQueuedCalls); retry later`
        : `the call waited in this client's queue for the worker's limits (${limits}) and was never sent`;
    return callFailed(code, details, call);
  }

  /** `--max-concurrent-calls 2, --max-inflight-bytes 1073741824`: the limits as set. */
  private describeLimits(): string {
    const set = [];
    if (Number.isFinite(this.maxCalls)) set.push(`--max-concurrent-calls ${this.maxCalls}`);
    if (Number.isFinite(this.maxBytes)) set.push(`--max-inflight-bytes ${this.maxBytes}`);
    return set.join(", ") || "none";
  }
}
