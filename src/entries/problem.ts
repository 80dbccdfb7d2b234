import { DecodeError, type DecodeErrorCode, EncodeError } from "../errors";

/** A broken rule: its DecodeError code, what is wrong, and where below the checked field. */
export interface Problem {
  code: Extract<
    DecodeErrorCode,
    "invalid-mesh" | "duplicate-device" | "unknown-axis" | "repeated-axis" | "invalid-value"
  >;
  detail: string;
  /** A path suffix such as `.axis_names[1]` or `[7]`; absent means the checked field itself. */
  at?: string;
}

/** Decoding's side of a rule: throws a broken rule as a DecodeError at `path` plus its suffix. */
export function raise(path: string, problem: Problem | undefined): void {
  if (problem) throw new DecodeError(`${path}${problem.at ?? ""}`, problem.code, problem.detail);
}

/** Lowering's side of a rule: throws a broken rule as an EncodeError at `path`. */
export function refuse(path: string, problem: Problem | undefined): void {
  if (problem) throw new EncodeError(path, problem.detail);
}
