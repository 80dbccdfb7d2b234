import { status } from "@grpc/grpc-js";
import { WorkerError } from "../../src/rpc";

/**
 * What became of a soak part's calls: answered (and checked), answered wrong, failed (by gRPC
 * status), or hung. A call is hung when it has neither an answer nor a status by its deadline
 * plus a margin, by a timer of the soak's own: so it is counted even if gRPC never ends it.
 */

/** An answer that differs from the values computed in TypeScript. */
export class WrongAnswer extends Error {
  override name = "WrongAnswer";
}

/** The counts of one part, or of a slice of it. */
export interface Tally {
  started: number;
  answered: number;
  /** Answers that differ from the values computed in TypeScript. */
  wrong: number;
  /** Failed calls by status name (UNAVAILABLE ...), or by error class for other errors. */
  failed: Record<string, number>;
  hung: number;
  /** Hung calls that ended later after all (already counted as hung). */
  endedAfterHung: number;
  /** Up to EXAMPLES distinct messages seen for each failure (and wrong answers), to say what it was. */
  examples: Record<string, string[]>;
}

/** Distinct messages kept per failure: enough to tell its causes apart, few enough to read. */
const EXAMPLES = 4;

/** A tally with nothing counted. */
export function emptyTally(): Tally {
  return {
    started: 0,
    answered: 0,
    wrong: 0,
    failed: {},
    hung: 0,
    endedAfterHung: 0,
    examples: {},
  };
}

/** How one call ended. */
export type Outcome =
  | { kind: "answered" }
  | { kind: "wrong"; message: string }
  | { kind: "failed"; code: string; message: string }
  | { kind: "hung" };

/** The failure's name in a tally: the gRPC status of a WorkerError, else the error's class. */
export function failureName(error: unknown): string {
  if (error instanceof WorkerError) return status[error.code] ?? `code ${error.code}`;
  return error instanceof Error ? error.name : typeof error;
}

/** Counts `outcome` into `tally` (a call's `started` is counted when it starts). */
export function count(tally: Tally, outcome: Outcome): void {
  switch (outcome.kind) {
    case "answered":
      tally.answered++;
      return;
    case "wrong":
      tally.wrong++;
      keepExample(tally, "wrong", outcome.message);
      return;
    case "failed":
      tally.failed[outcome.code] = (tally.failed[outcome.code] ?? 0) + 1;
      keepExample(tally, outcome.code, outcome.message);
      return;
    case "hung":
      tally.hung++;
      return;
  }
}

/** Every failure of the tally, all codes together. */
export function failures(tally: Tally): number {
  return Object.values(tally.failed).reduce((a, b) => a + b, 0);
}

/** Calls that have ended, one way or another (hung ones included). */
export function ended(tally: Tally): number {
  return tally.answered + tally.wrong + failures(tally) + tally.hung;
}

/** One line for a progress bar: "12,345 answered, 0 wrong, 3 failed, 0 hung". */
export function summary(tally: Tally): string {
  const n = (v: number) => v.toLocaleString("en-US");
  return `${n(tally.answered)} answered, ${n(tally.wrong)} wrong, ${n(failures(tally))} failed, ${n(tally.hung)} hung`;
}

/** Adds `more` into `into`. */
export function addTally(into: Tally, more: Tally): void {
  into.started += more.started;
  into.answered += more.answered;
  into.wrong += more.wrong;
  into.hung += more.hung;
  into.endedAfterHung += more.endedAfterHung;
  for (const [code, n] of Object.entries(more.failed))
    into.failed[code] = (into.failed[code] ?? 0) + n;
  for (const [code, texts] of Object.entries(more.examples)) {
    for (const text of texts) keepExample(into, code, text);
  }
}

/** Keeps `message` unless one like it (the same up to its first comma or period, numbers aside) is kept. */
function keepExample(tally: Tally, code: string, message: string): void {
  tally.examples[code] ??= [];
  const kept = tally.examples[code];
  const shape = (text: string) => text.replace(/\d+/g, "N").split(/[,.]/)[0];
  if (kept.length < EXAMPLES && !kept.some((k) => shape(k) === shape(message))) kept.push(message);
}

/** When a call counts as hung: its deadline plus a margin. */
export interface HangRule {
  deadlineMs: number;
  marginMs: number;
}

/**
 * Runs one call with a timer of its own: resolves with its outcome, or "hung" once
 * `deadlineMs + marginMs` pass without an answer or a status. A hung call is then aborted
 * (its signal), which frees it if gRPC still can; if it ends later anyway, `onLateEnd` says so.
 */
export function watchCall(
  call: (signal: AbortSignal) => Promise<void>,
  rule: HangRule,
  onLateEnd: () => void,
): Promise<Outcome> {
  const abort = new AbortController();
  return new Promise((resolve) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      resolve({ kind: "hung" });
      abort.abort();
    }, rule.deadlineMs + rule.marginMs);
    const end = (outcome: Outcome) => {
      if (settled) return onLateEnd();
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    call(abort.signal).then(
      () => end({ kind: "answered" }),
      (error: unknown) =>
        end(
          error instanceof WrongAnswer
            ? { kind: "wrong", message: error.message }
            : { kind: "failed", code: failureName(error), message: messageOf(error) },
        ),
    );
  });
}

/** A WorkerError's details (what the worker or gRPC said), else the error's message. */
function messageOf(error: unknown): string {
  if (error instanceof WorkerError) return error.details;
  return error instanceof Error ? error.message : String(error);
}
