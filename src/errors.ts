/** Why a payload was refused; the codes are listed in docs/wire-format.md and shared with Python. */
export const DECODE_ERROR_CODES = [
  "malformed",
  "unsupported-version",
  "wrong-payload-kind",
  "missing",
  "reference-out-of-range",
  "forward-reference",
  "wrong-entry-kind",
  "unknown-enum",
  "invalid-mesh",
  "duplicate-device",
  "invalid-iota",
  "unknown-axis",
  "repeated-axis",
  "invalid-tree",
  "invalid-value",
  "limit-exceeded",
  "writer-mismatch",
] as const;

/** One of DECODE_ERROR_CODES. */
export type DecodeErrorCode = (typeof DECODE_ERROR_CODES)[number];

/** The only error that decoding throws: what is wrong, and where in the payload. */
export class DecodeError extends Error {
  override readonly name = "DecodeError";

  constructor(
    readonly path: string,
    readonly code: DecodeErrorCode,
    readonly detail: string,
  ) {
    super(`${path}: ${detail}`);
  }
}

/** Thrown by lowering when a model cannot be written, before any bytes exist. */
export class EncodeError extends Error {
  override readonly name = "EncodeError";

  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${path}: ${detail}`);
  }
}
