import type { TreeDef } from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";

/**
 * The str key pool front-coded (colocated.v1.1): sorted keys such as "layer_0001", "layer_0002"
 * share long prefixes, so each key is written as the UTF-8 bytes after its common prefix with
 * the key before it.
 */

const utf8 = new TextEncoder();
// Fatal, so a key that is not UTF-8 is an error; a leading BOM is part of the key.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The pool as key_text and key_sizes: per key, its shared prefix length, then its suffix length. */
export function frontCode(keys: readonly string[]): { keyText: Uint8Array; keySizes: number[] } {
  // One UTF-8 encoding for all keys (an encode per key costs more than the rest together),
  // each key followed by a NUL so that no surrogate pair forms across two keys.
  const all = utf8.encode(`${keys.join("\0")}\0`);
  const keySizes: number[] = new Array(2 * keys.length);
  const keyText = new Uint8Array(all.length);
  let written = 0;
  let previous = 0;
  let previousLength = 0;
  let start = 0;
  for (let i = 0; i < keys.length; i++) {
    // Found by its length, not by the NUL: a key may hold NULs of its own.
    const end = start + utf8Length(keys[i]);
    const length = end - start;
    const limit = Math.min(previousLength, length);
    let prefix = 0;
    while (prefix < limit && all[previous + prefix] === all[start + prefix]) prefix++;
    keySizes[2 * i] = prefix;
    keySizes[2 * i + 1] = length - prefix;
    for (let j = start + prefix; j < end; j++) keyText[written++] = all[j];
    previous = start;
    previousLength = length;
    start = end + 1;
  }
  return { keyText: keyText.slice(0, written), keySizes };
}

/** The length of a string in UTF-8, as TextEncoder writes it (a lone surrogate is 3 bytes). */
function utf8Length(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) length += 1;
    else if (c < 0x800) length += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next < 0xe000) {
        length += 4;
        i++;
      } else length += 3;
    } else length += 3;
  }
  return length;
}

/** A TreeDef's str keys, and (front-coded) which are above the key before them, by code point. */
export interface KeyPoolRead {
  keys: readonly string[];
  /** rises[k] is 1 when key k is above key k - 1 (0 for key 0); absent for `strings`. */
  rises?: Uint8Array;
}

/**
 * The str key pool a TreeDef carries: `strings` as written, or its key_text and key_sizes read
 * back. Every size is checked before a key is built, and the bytes all keys expand to count
 * against the payload limit (a prefix can repeat a long key many times).
 */
export function readKeyPool(message: TreeDef, path: string, maxBytes: number): KeyPoolRead {
  const { keyText: text, keySizes: sizes } = message;
  if (text.length === 0 && sizes.length === 0) return { keys: message.strings };
  if (message.strings.length > 0) {
    const detail = "the str keys are in strings or in key_text, not both";
    throw new DecodeError(`${path}.key_text`, "invalid-tree", detail);
  }
  if (sizes.length % 2 !== 0) {
    const detail = `${sizes.length} sizes, two per key`;
    throw new DecodeError(`${path}.key_sizes`, "invalid-tree", detail);
  }
  // Every key is expanded into one buffer, and the ASCII keys before the first that is not are
  // decoded at once: each is then a slice of one string (flat, so comparing keys later reads no
  // rope). From the first key that is not ASCII on, each key is decoded as it is read, so a key
  // that is not UTF-8 is refused where Python refuses it, before the sizes after it.
  const count = sizes.length / 2;
  const keys = new Array<string>(count);
  const starts = new Array<number>(count + 1);
  const rises = new Uint8Array(count);
  let ascii = count;
  let all = new Uint8Array(Math.max(64, 2 * text.length));
  let length = 0;
  let read = 0;
  let at = 0;
  let high = 0;
  for (let i = 0; i < sizes.length; i += 2) {
    const prefix = sizes[i];
    const suffix = sizes[i + 1];
    if (prefix > length) {
      const detail = `key ${i / 2} shares ${prefix} bytes with a key of ${length}`;
      throw new DecodeError(`${path}.key_sizes[${i}]`, "invalid-tree", detail);
    }
    if (suffix > text.length - read) {
      const detail = `key ${i / 2} takes ${suffix} bytes, key_text has ${text.length - read} left`;
      throw new DecodeError(`${path}.key_sizes[${i + 1}]`, "invalid-tree", detail);
    }
    if (at + prefix + suffix > maxBytes) {
      const detail = `the keys expand past the limit of ${maxBytes} bytes`;
      throw new DecodeError(`${path}.key_sizes[${i}]`, "limit-exceeded", detail);
    }
    if (at + prefix + suffix > all.length) {
      const grown = new Uint8Array(Math.max(at + prefix + suffix, 2 * all.length));
      grown.set(all.subarray(0, at));
      all = grown;
    }
    const previous = at - length;
    starts[i / 2] = at;
    all.copyWithin(at, previous, previous + prefix);
    for (let j = 0; j < suffix; j++) {
      const byte = text[read + j];
      all[at + prefix + j] = byte;
      high |= byte;
    }
    read += suffix;
    // UTF-8's byte order is code point order: the first byte after the shared prefix (past any
    // the writer did not count as shared) says whether this key is above the one before.
    const shorter = Math.min(length, prefix + suffix);
    let p = prefix;
    while (p < shorter && all[at + p] === all[previous + p]) p++;
    rises[i / 2] = (p < shorter ? all[at + p] > all[previous + p] : prefix + suffix > length)
      ? 1
      : 0;
    length = prefix + suffix;
    if (high >= 0x80) {
      if (ascii === count) ascii = i / 2;
      keys[i / 2] = decodeKey(all.subarray(at, at + length), `${path}.key_text`, i / 2);
    }
    at += length;
  }
  starts[count] = at;
  if (read !== text.length) {
    const detail = `${text.length - read} bytes of key_text are left over`;
    throw new DecodeError(`${path}.key_text`, "invalid-tree", detail);
  }
  // ASCII: byte offsets are string offsets.
  const joined = strictUtf8.decode(all.subarray(0, starts[ascii]));
  for (let k = 0; k < ascii; k++) keys[k] = joined.slice(starts[k], starts[k + 1]);
  return { keys, rises };
}

function decodeKey(bytes: Uint8Array, path: string, index: number): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new DecodeError(path, "invalid-value", `key ${index} is not UTF-8`);
  }
}
