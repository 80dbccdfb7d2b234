import type { KeyTrie } from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";
import { bytesFieldSize, packedFieldSize, varintSize } from "../wire-sizes";
import { frontCode } from "./front-code";
import { SequenceIds } from "./hash-cons";

/**
 * The str key pool as a trie of key parts (colocated.v1.3): "params.model.layers.12.mlp.up_proj.
 * weight" is the path params. → model. → layers. → 1 → 2. → mlp. → up_proj. → weight, and a
 * subtrie equal to one written before (every layer's, every optimizer moment's) is written as a
 * repeat of it. The writer cuts a key after each ASCII character that is not a letter or "_";
 * the reader takes any labels, so no separator is special. python/colocated_wire/entries/
 * key_trie.py is the same.
 */

/**
 * The parts of a key, each ending after a separator or a digit (so numbered keys, "p017" or
 * "layers.17", share their digits' subtries); the empty key is one empty part.
 */
export function splitKey(key: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x80 && !WORD[c]) {
      parts.push(key.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < key.length || parts.length === 0) parts.push(key.slice(start));
  return parts;
}

/** ASCII letters and "_": the characters a key is never cut after. */
const WORD = new Uint8Array(128);
for (let c = 0; c < 128; c++) WORD[c] = /[A-Za-z_]/.test(String.fromCharCode(c)) ? 1 : 0;

/** A pool's trie, and (when every key is ASCII) the bytes front coding would take instead. */
export interface BuiltKeyTrie {
  trie: KeyTrie;
  frontCodedSize?: number;
}

/**
 * The trie of a pool of distinct keys whose preorder is the pool's order: each key shares the
 * parts before its last with the key before it where they agree, and its last part is a new
 * node. A node with children whose key end and children equal an earlier written node's is a
 * repeat of that node.
 */
export function buildKeyTrie(keys: readonly string[]): KeyTrie {
  return measureKeyTrie(keys).trie;
}

/** buildKeyTrie's trie, and the size of front coding the same keys when it comes free. */
export function measureKeyTrie(keys: readonly string[]): BuiltKeyTrie {
  // The trie, nodes in preorder (made in that order): label, parent's last child, key end.
  const labelIds = new Map<string, number>();
  const labels: string[] = [];
  const label: number[] = [];
  const ends: number[] = [];
  const firstChild: number[] = [];
  const nextSibling: number[] = [];
  const lastChild: number[] = [];
  const children: number[] = [];
  let topLast = -1;
  const add = (text: string, parent: number): number => {
    let id = labelIds.get(text);
    if (id === undefined) {
      id = labels.length;
      labels.push(text);
      labelIds.set(text, id);
    }
    const node = label.length;
    label.push(id);
    ends.push(0);
    firstChild.push(-1);
    nextSibling.push(-1);
    lastChild.push(-1);
    children.push(0);
    if (parent < 0) {
      if (topLast >= 0) nextSibling[topLast] = node;
      topLast = node;
    } else {
      if (lastChild[parent] < 0) firstChild[parent] = node;
      else nextSibling[lastChild[parent]] = node;
      lastChild[parent] = node;
      children[parent]++;
    }
    return node;
  };
  // The key before: its nodes, one per part, and where its cuts are. A cut depends only on the
  // character before it, so the parts that end at a cut within the prefix two keys share are
  // the same parts: only the rest of a key is cut and looked up.
  let previous = "";
  // path[0 .. depthOf] are the key's nodes, cuts[0 .. cutCount] where its cuts are.
  let path: Int32Array = new Int32Array(64);
  let cuts: Int32Array = new Int32Array(64);
  let pathLength = 0;
  let cutCount = 0;
  let ascii = true;
  let text = 0;
  let sizes = 0;
  for (const key of keys) {
    if (key.length + 2 > path.length) {
      path = grow(path, key.length + 2);
      cuts = grow(cuts, key.length + 2);
    }
    const limit = Math.min(previous.length, key.length);
    let shared = 0;
    while (shared < limit && key.charCodeAt(shared) === previous.charCodeAt(shared)) shared++;
    let depth = 0;
    while (depth < cutCount && cuts[depth] <= shared && cuts[depth] < key.length) depth++;
    pathLength = depth;
    cutCount = depth;
    let start = depth > 0 ? cuts[depth - 1] : 0;
    for (let i = start; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) ascii = false;
      else if (!WORD[c]) {
        const parent = pathLength > 0 ? path[pathLength - 1] : -1;
        path[pathLength++] = add(key.slice(start, i + 1), parent);
        cuts[cutCount++] = i + 1;
        start = i + 1;
      }
    }
    if (start < key.length || pathLength === depth) {
      const parent = pathLength > 0 ? path[pathLength - 1] : -1;
      path[pathLength++] = add(key.slice(start), parent);
    }
    ends[path[pathLength - 1]] = 1;
    text += key.length - shared;
    sizes += varintSize(shared) + varintSize(key.length - shared);
    previous = key;
  }
  // Each node's subtrie by value, children before parents (they come after them in preorder).
  const sequences = new SequenceIds();
  const shape = new Int32Array(label.length);
  let values: Int32Array = new Int32Array(64);
  for (let node = label.length - 1; node >= 0; node--) {
    if (2 * children[node] + 1 > values.length) values = grow(values, 2 * children[node] + 1);
    values[0] = ends[node];
    let n = 1;
    for (let c = firstChild[node]; c >= 0; c = nextSibling[c]) {
      values[n++] = label[c];
      values[n++] = shape[c];
    }
    shape[node] = sequences.id(values, n);
  }
  // Written in preorder (the order the nodes were made in, so a subtrie is a range of them):
  // a node with children whose subtrie was written before repeats it and skips its own.
  const subtrieEnd = new Int32Array(label.length);
  for (let node = label.length - 1; node >= 0; node--)
    subtrieEnd[node] = lastChild[node] < 0 ? node + 1 : subtrieEnd[lastChild[node]];
  const writtenAt = new Int32Array(sequences.size).fill(-1);
  const written: number[] = [];
  const usedLabels = new Int32Array(labels.length).fill(-1);
  const order: string[] = [];
  for (let node = 0; node < label.length; ) {
    if (usedLabels[label[node]] < 0) {
      usedLabels[label[node]] = order.length;
      order.push(labels[label[node]]);
    }
    const index = written.length / 2;
    const source = writtenAt[shape[node]];
    if (children[node] > 0 && source >= 0) {
      written.push(usedLabels[label[node]], 2 * source + 1);
      node = subtrieEnd[node];
      continue;
    }
    written.push(usedLabels[label[node]], 4 * children[node] + 2 * ends[node]);
    if (children[node] > 0) writtenAt[shape[node]] = index;
    node++;
  }
  const { keyText, keySizes } = frontCode(order);
  const trie = { labelText: keyText, labelSizes: keySizes, nodes: written };
  if (!ascii) return { trie };
  // ASCII: characters are bytes, so the shared prefixes are front coding's.
  const frontCodedSize = bytesFieldSize(text) + bytesFieldSize(sizes);
  return { trie, frontCodedSize };
}

/** A copy of `array` with room for at least `size`. */
function grow(array: Int32Array, size: number): Int32Array {
  const grown = new Int32Array(Math.max(size, 2 * array.length));
  grown.set(array);
  return grown;
}

/** The bytes TreeDef.key_trie takes on the wire. */
export function keyTrieSize(trie: KeyTrie): number {
  const inner =
    bytesFieldSize(trie.labelText.length) +
    packedFieldSize(trie.labelSizes) +
    packedFieldSize(trie.nodes);
  return 1 + varintSize(inner) + inner;
}

/** The bytes TreeDef.key_text and key_sizes take on the wire. */
export function frontCodedSize(keyText: Uint8Array, keySizes: readonly number[]): number {
  return bytesFieldSize(keyText.length) + packedFieldSize(keySizes);
}

/** A trie's keys, in preorder. */
export interface TrieKeys {
  keys: string[];
  /** rises[k] is 1 when key k is above key k - 1 by code point (0 for key 0). */
  rises: Uint8Array;
}

/** A trie's keys expanded: their UTF-8 bytes end to end, and where each starts. */
interface ExpandedKeys {
  bytes: Uint8Array;
  /** starts[k] is where key k starts; starts[count] is the end of the last. */
  starts: number[];
  /** rises[k] is 1 when key k is above key k - 1 by code point (0 for key 0). */
  rises: Uint8Array;
}

/** Limits a trie's keys are held to: how many, and their bytes together. */
export interface KeyTrieLimits {
  maxKeys: number;
  maxBytes: number;
}

/**
 * A trie's keys in preorder, as UTF-8 bytes. Every label and node is checked, and the keys
 * counted and measured against the limits from sizes known when each node is met, before any
 * key is written: a repeat of a repeat of ... costs one step per written node to refuse.
 */
export function readKeyTrie(trie: KeyTrie, path: string, limits: KeyTrieLimits): TrieKeys {
  const at = `${path}.key_trie`;
  const labels = readLabels(trie, at, limits.maxBytes);
  const { nodes } = trie;
  if (nodes.length % 2 !== 0) {
    const detail = `${nodes.length} numbers, two per node`;
    throw new DecodeError(`${at}.nodes`, "invalid-tree", detail);
  }
  const count = nodes.length / 2;
  // Per node: where its subtrie ends (-1 while open), its keys, and their bytes from its label on.
  const end = new Int32Array(count).fill(-1);
  const keyCounts = new Float64Array(count);
  const keyBytes = new Float64Array(count);
  const open: number[] = [];
  const awaited: number[] = [];
  const labelLength = (node: number) =>
    labels.starts[nodes[2 * node] + 1] - labels.starts[nodes[2 * node]];
  let totalKeys = 0;
  let totalBytes = 0;
  /** Counts a finished node's keys in its parent's (or the trie's), within the limits. */
  const finish = (node: number, last: number) => {
    const parent = open.length > 0 ? open[open.length - 1] : -1;
    const parentLength = parent < 0 ? 0 : labelLength(parent);
    const allKeys = (parent < 0 ? totalKeys : keyCounts[parent]) + keyCounts[node];
    const allBytes =
      (parent < 0 ? totalBytes : keyBytes[parent]) +
      keyBytes[node] +
      keyCounts[node] * parentLength;
    if (allKeys > limits.maxKeys) {
      const detail = `the trie holds more than the limit of ${limits.maxKeys} keys`;
      throw new DecodeError(`${at}.nodes[${2 * last + 1}]`, "limit-exceeded", detail);
    }
    if (allBytes > limits.maxBytes) {
      const detail = `the keys expand past the limit of ${limits.maxBytes} bytes`;
      throw new DecodeError(`${at}.nodes[${2 * last + 1}]`, "limit-exceeded", detail);
    }
    if (parent < 0) {
      totalKeys = allKeys;
      totalBytes = allBytes;
    } else {
      keyCounts[parent] = allKeys;
      keyBytes[parent] = allBytes;
    }
  };
  for (let i = 0; i < count; i++) {
    const id = nodes[2 * i];
    if (id >= labels.count) {
      const detail = `label ${id} of ${labels.count}`;
      throw new DecodeError(`${at}.nodes[${2 * i}]`, "reference-out-of-range", detail);
    }
    const form = nodes[2 * i + 1];
    if (form % 2 === 1) {
      const source = (form - 1) / 2;
      if (source >= i || end[source] < 0 || nodes[2 * source + 1] % 2 === 1) {
        const detail = `node ${i} repeats node ${source}, which is not a written node before it`;
        throw new DecodeError(`${at}.nodes[${2 * i + 1}]`, "forward-reference", detail);
      }
      keyCounts[i] = keyCounts[source];
      keyBytes[i] = keyBytes[source] + keyCounts[source] * (labelLength(i) - labelLength(source));
    } else {
      const children = Math.floor(form / 4);
      const keyEnds = (form >> 1) & 1;
      if (children === 0 && keyEnds === 0) {
        const detail = `node ${i} has no key and no children`;
        throw new DecodeError(`${at}.nodes[${2 * i + 1}]`, "invalid-tree", detail);
      }
      if (children > count - 1 - i) {
        const detail = `node ${i} has ${children} children, ${count - 1 - i} nodes follow it`;
        throw new DecodeError(`${at}.nodes[${2 * i + 1}]`, "invalid-tree", detail);
      }
      keyCounts[i] = keyEnds;
      keyBytes[i] = keyEnds * labelLength(i);
      if (children > 0) {
        open.push(i);
        awaited.push(children);
        continue;
      }
    }
    end[i] = i + 1;
    finish(i, i);
    // Every parent whose last child this was is finished too.
    while (open.length > 0 && --awaited[awaited.length - 1] === 0) {
      const parent = open.pop() as number;
      awaited.pop();
      end[parent] = i + 1;
      finish(parent, i);
    }
  }
  if (open.length > 0) {
    const node = open[open.length - 1];
    const detail = `node ${node} awaits ${awaited[awaited.length - 1]} more children`;
    throw new DecodeError(`${at}.nodes`, "invalid-tree", detail);
  }
  const expanded = writeKeys(nodes, labels, end, totalKeys, totalBytes);
  const ascii = isAscii(labels.bytes, 0, labels.bytes.length);
  return {
    keys: decodeKeys(expanded.bytes, expanded.starts, `${at}.label_text`, ascii),
    rises: expanded.rises,
  };
}

// Fatal, so a key that is not UTF-8 is an error; a leading BOM is part of the key.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Keys from their UTF-8 bytes end to end: the ASCII ones before the first that is not (every
 * one when the labels are ASCII) decoded at once, each a slice of one flat string.
 */
function decodeKeys(
  bytes: Uint8Array,
  starts: readonly number[],
  path: string,
  allAscii: boolean,
): string[] {
  const count = starts.length - 1;
  const keys = new Array<string>(count);
  let ascii = allAscii ? count : 0;
  while (ascii < count && isAscii(bytes, starts[ascii], starts[ascii + 1])) ascii++;
  sliceAsciiKeys(bytes, starts, ascii, keys);
  for (let k = ascii; k < count; k++)
    keys[k] = decodeKey(bytes.subarray(starts[k], starts[k + 1]), path, k);
  return keys;
}

/**
 * Keys 0 to `ascii` - 1, all ASCII, decoded in one call: byte offsets are then string offsets, and
 * each key is a slice of one flat string (comparing keys later reads no rope).
 */
export function sliceAsciiKeys(
  bytes: Uint8Array,
  starts: readonly number[],
  ascii: number,
  keys: string[],
): void {
  const joined = strictUtf8.decode(bytes.subarray(0, starts[ascii]));
  for (let k = 0; k < ascii; k++) keys[k] = joined.slice(starts[k], starts[k + 1]);
}

function isAscii(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] >= 0x80) return false;
  return true;
}

/** One key from its UTF-8 bytes, or a DecodeError at `path` naming it. */
export function decodeKey(bytes: Uint8Array, path: string, index: number): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new DecodeError(path, "invalid-value", `key ${index} is not UTF-8`);
  }
}

/** A trie's labels: their bytes end to end, and where each starts. */
interface Labels {
  bytes: Uint8Array;
  starts: Int32Array;
  count: number;
}

/** The front-coded labels, every size checked before a byte is copied. */
function readLabels(trie: KeyTrie, at: string, maxBytes: number): Labels {
  const { labelText: text, labelSizes: sizes } = trie;
  if (sizes.length % 2 !== 0) {
    const detail = `${sizes.length} sizes, two per label`;
    throw new DecodeError(`${at}.label_sizes`, "invalid-tree", detail);
  }
  const count = sizes.length / 2;
  const starts = new Int32Array(count + 1);
  let total = 0;
  let previous = 0;
  let read = 0;
  for (let i = 0; i < count; i++) {
    const prefix = sizes[2 * i];
    const suffix = sizes[2 * i + 1];
    if (prefix > previous) {
      const detail = `label ${i} shares ${prefix} bytes with a label of ${previous}`;
      throw new DecodeError(`${at}.label_sizes[${2 * i}]`, "invalid-tree", detail);
    }
    if (suffix > text.length - read) {
      const detail = `label ${i} takes ${suffix} bytes, label_text has ${text.length - read} left`;
      throw new DecodeError(`${at}.label_sizes[${2 * i + 1}]`, "invalid-tree", detail);
    }
    total += prefix + suffix;
    if (total > maxBytes) {
      const detail = `the labels expand past the limit of ${maxBytes} bytes`;
      throw new DecodeError(`${at}.label_sizes[${2 * i}]`, "limit-exceeded", detail);
    }
    read += suffix;
    previous = prefix + suffix;
    starts[i + 1] = total;
  }
  if (read !== text.length) {
    const detail = `${text.length - read} bytes of label_text are left over`;
    throw new DecodeError(`${at}.label_text`, "invalid-tree", detail);
  }
  const bytes = new Uint8Array(total);
  read = 0;
  for (let i = 0; i < count; i++) {
    const start = starts[i];
    const prefix = sizes[2 * i];
    const suffix = sizes[2 * i + 1];
    bytes.copyWithin(start, i === 0 ? 0 : starts[i - 1], (i === 0 ? 0 : starts[i - 1]) + prefix);
    bytes.set(text.subarray(read, read + suffix), start + prefix);
    read += suffix;
  }
  return { bytes, starts, count };
}

/**
 * Writes a checked trie's keys in preorder. The path from the root is built where the next key
 * goes: a key met is already in place, and the next path takes what it shares with that key
 * from it (one native copy), so each label byte is written once per node visited.
 */
function writeKeys(
  nodes: readonly number[],
  labels: Labels,
  end: Int32Array,
  count: number,
  total: number,
): ExpandedKeys {
  // Every path built is the start of a key still to come, so the keys' bytes hold it.
  const bytes = new Uint8Array(total);
  const starts = new Array<number>(count + 1);
  const rises = new Uint8Array(count);
  const labelBytes = labels.bytes;
  const labelStarts = labels.starts;
  // Frames of (next node, end of its siblings, path length before them): one per open level.
  const frames = new Int32Array(3 * (nodes.length / 2 + 1));
  frames[1] = nodes.length / 2;
  let sp = 3;
  let written = 0;
  let k = 0;
  // How much of the path is in place at `written`, and how much the last key shares with it.
  let inPlace = 0;
  let shared = 0;
  while (sp > 0) {
    const top = sp - 3;
    const node = frames[top];
    if (node === frames[top + 1]) {
      sp = top;
      continue;
    }
    frames[top] = end[node];
    const length = frames[top + 2];
    if (inPlace < length) {
      const last = starts[k - 1];
      bytes.copyWithin(written, last, last + length);
    }
    if (length < shared) shared = length;
    const id = nodes[2 * node];
    const labelStart = labelStarts[id];
    const labelLength = labelStarts[id + 1] - labelStart;
    const at = written + length;
    for (let j = 0; j < labelLength; j++) bytes[at + j] = labelBytes[labelStart + j];
    const full = length + labelLength;
    inPlace = full;
    const form = nodes[2 * node + 1];
    const body = form % 2 === 1 ? (form - 1) / 2 : node;
    const bodyForm = nodes[2 * body + 1];
    if ((bodyForm >> 1) & 1) {
      starts[k] = written;
      if (k > 0) {
        const previous = starts[k - 1];
        const previousLength = written - previous;
        const shorter = Math.min(previousLength, full);
        let p = Math.min(shared, shorter);
        while (p < shorter && bytes[written + p] === bytes[previous + p]) p++;
        rises[k] = (p < shorter ? bytes[written + p] > bytes[previous + p] : full > previousLength)
          ? 1
          : 0;
      }
      written += full;
      shared = full;
      inPlace = 0;
      k++;
    }
    if (bodyForm >= 4) {
      frames[sp] = body + 1;
      frames[sp + 1] = end[body];
      frames[sp + 2] = full;
      sp += 3;
    }
  }
  starts[count] = written;
  return { bytes, starts, rises };
}
