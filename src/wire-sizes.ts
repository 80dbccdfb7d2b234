/**
 * Sizes on the wire, counted without writing: what a writer compares to choose the smaller of
 * two forms (a device list's, a key pool's, whether a leaf copy pays).
 */

/** The bytes a uint32 takes as a varint. */
export function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/** The bytes a length-delimited field (tag below 16) of `length` bytes takes; 0 when empty. */
export function bytesFieldSize(length: number): number {
  return length === 0 ? 0 : 1 + varintSize(length) + length;
}

/** The bytes a packed uint32 field (tag below 16) takes; 0 when empty. */
export function packedFieldSize(values: readonly number[]): number {
  let size = 0;
  for (const v of values) size += varintSize(v);
  return bytesFieldSize(size);
}
