/**
 * A payload read as a tree of protobuf fields without a schema, so the fuzzer can change a
 * value, drop or repeat a field and write the lengths back: mutations that keep the bytes
 * well-formed reach the checks behind the wire scan. A length-delimited field is read as a
 * message when its bytes parse as one. python/tests/fuzzing.py reads and writes alike.
 */

/** One field: its number and wire type, its value's bytes, and perhaps the fields they hold. */
export interface WireNode {
  number: number;
  wireType: number;
  /** A varint's bytes, a fixed value, or a length-delimited field's content. */
  value: Uint8Array;
  children?: WireNode[];
}

const MAX_DEPTH = 16;

/** The fields of `bytes`, or undefined if they are not a well-formed message. */
export function readTree(bytes: Uint8Array, depth = 0): WireNode[] | undefined {
  const nodes: WireNode[] = [];
  let pos = 0;
  /** The end of the varint at `pos`, or -1. */
  const varintEnd = (): number => {
    for (let i = pos; i < Math.min(pos + 10, bytes.length); i++) if (bytes[i] < 0x80) return i + 1;
    return -1;
  };
  const number = (from: number, to: number): number => {
    let value = 0;
    for (let i = to - 1; i >= from; i--) value = value * 128 + (bytes[i] & 0x7f);
    return value;
  };
  while (pos < bytes.length) {
    const tagEnd = varintEnd();
    if (tagEnd < 0 || tagEnd - pos > 5) return undefined;
    const tag = number(pos, tagEnd);
    pos = tagEnd;
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0 || tag > 0xffffffff) return undefined;
    let start = pos;
    let end: number;
    if (wireType === 0) {
      end = varintEnd();
      if (end < 0) return undefined;
    } else if (wireType === 2) {
      const lengthEnd = varintEnd();
      if (lengthEnd < 0) return undefined;
      start = lengthEnd;
      end = start + number(pos, lengthEnd);
    } else if (wireType === 1 || wireType === 5) {
      end = pos + (wireType === 1 ? 8 : 4);
    } else {
      return undefined;
    }
    if (end > bytes.length) return undefined;
    const value = bytes.subarray(start, end);
    pos = end;
    const children =
      wireType === 2 && value.length > 0 && depth < MAX_DEPTH
        ? readTree(value, depth + 1)
        : undefined;
    nodes.push({ number: field, wireType, value, children });
  }
  return nodes;
}

/** The bytes of a tree, with lengths recomputed. */
export function writeTree(nodes: readonly WireNode[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const node of nodes) {
    parts.push(varint(node.number * 8 + node.wireType));
    const value = node.children ? writeTree(node.children) : node.value;
    if (node.wireType === 2) parts.push(varint(value.length));
    parts.push(value);
  }
  return Buffer.concat(parts);
}

/** Every node of a tree with the list that holds it, in preorder. */
export function allNodes(nodes: WireNode[]): { node: WireNode; list: WireNode[] }[] {
  const out: { node: WireNode; list: WireNode[] }[] = [];
  for (const node of nodes) {
    out.push({ node, list: nodes });
    if (node.children) out.push(...allNodes(node.children));
  }
  return out;
}

/** A varint's bytes. */
export function varint(value: number | bigint): Uint8Array {
  const out: number[] = [];
  let v = BigInt(value);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return new Uint8Array(out);
}
