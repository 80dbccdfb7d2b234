import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import {
  count,
  emptyTally,
  type HangRule,
  type Outcome,
  type Tally,
  watchCall,
} from "../../test/support/soak-tally";

/**
 * Keeps a number of calls in flight, each in a lane of its own that starts its next call when
 * the last one ends, until a time or a count runs out (whichever first) or it is told to stop:
 * every loop of the soak ends by itself, whatever the worker does.
 */

/** One call as it went: its number, when it started and ended (performance.now() ms), how. */
export interface CallRecord {
  n: number;
  startedAt: number;
  endedAt: number;
  outcome: Outcome;
}

/** What to call, how many at once, and for how long. */
export interface LaneOptions {
  inFlight: number;
  /** No call starts after this time (performance.now() ms). */
  untilMs: number;
  /** Nor after this many calls have started. */
  maxCalls: number;
  /** No call starts once this is aborted either. */
  stop?: AbortSignal;
  hang: HangRule;
  /** Call number `n`: resolves once answered and checked. */
  call: (n: number, signal: AbortSignal) => Promise<void>;
  /** Counts into this tally as calls end (so that a progress bar can read it); a new one if absent. */
  tally?: Tally;
  /** Told of every call once it ends. */
  onEnd?: (record: CallRecord) => void;
}

/** Why the lanes stopped starting calls. */
export type EndedBy = "time" | "count" | "stop";

/** A lane waits this long after a failed call, doubling up to BACKOFF_MAX_MS, as a client would. */
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 1_000;

/** Runs the lanes until no call may start and every lane's last call has ended (or hung). */
export async function keepCalling(
  options: LaneOptions,
): Promise<{ tally: Tally; endedBy: EndedBy }> {
  const tally = options.tally ?? emptyTally();
  let endedBy: EndedBy | undefined;
  const mayStart = () => {
    if (options.stop?.aborted) endedBy ??= "stop";
    else if (performance.now() >= options.untilMs) endedBy ??= "time";
    else if (tally.started >= options.maxCalls) endedBy ??= "count";
    return endedBy === undefined;
  };
  const lane = async () => {
    let backoffMs = 0;
    while (mayStart()) {
      const n = tally.started++;
      const startedAt = performance.now();
      const outcome = await watchCall(
        (signal) => options.call(n, signal),
        options.hang,
        () => {
          tally.endedAfterHung++;
        },
      );
      count(tally, outcome);
      options.onEnd?.({ n, startedAt, endedAt: performance.now(), outcome });
      if (outcome.kind === "answered") {
        backoffMs = 0;
        continue;
      }
      // A worker that is down refuses at once: without a pause, 64 lanes would spin on it.
      backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, backoffMs * 2));
      const left = options.untilMs - performance.now();
      if (left > 0) await sleep(Math.min(backoffMs, left));
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, lane));
  return { tally, endedBy: endedBy ?? "time" };
}
