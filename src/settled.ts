/**
 * Settled messages never change: a lowered part kept for the next payload (a table entry in its
 * value's slot, a tree's columns, a specs' message) is frozen, message and arrays through, so it
 * can be shared by every payload that holds it and its encoding written once (write-payload.ts).
 * Bytes fields are shared as they are (a typed array cannot be frozen): no encoder changes them.
 */

/** Freezes a message and everything in it; returns it. */
export function settled<M>(message: M): M {
  freeze(message);
  return message;
}

/** Whether a message was settled (and so will never change). */
export function isSettled(message: object): boolean {
  return Object.isFrozen(message);
}

function freeze(value: unknown): void {
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return;
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const part of Object.values(value)) freeze(part);
}
