/**
 * Payloads as base64 text: JAX's colocated Python sends output specs back as a 0-d
 * StringDType array holding the payload's base64 text, so a carrier's text is read as is.
 */

/** The bytes of a file's base64 text; strict, so that writing them back gives the same text. */
export function fromBase64Text(file: string, text: string): Uint8Array {
  const trimmed = text.trim(); // a file written by a shell often ends in a newline
  const bytes = Buffer.from(trimmed, "base64");
  if (!trimmed || bytes.toString("base64") !== trimmed) {
    throw new Error(`${file}: not base64 text (standard alphabet, padded)`);
  }
  return bytes;
}

/** A payload as the base64 text a carrier holds (standard alphabet, padded, no newline). */
export function toBase64Text(bytes: Uint8Array): Uint8Array {
  return Buffer.from(Buffer.from(bytes).toString("base64"), "ascii");
}
