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

/**
 * The str key pool a TreeDef carries: `strings` as written, or its key_text and key_sizes read
 * back. Every size is checked before a key is built, and the bytes all keys expand to count
 * against the payload limit (a prefix can repeat a long key many times).
 */
export function readKeyPool(message: TreeDef, path: string, maxBytes: number): readonly string[] {
  const { keyText: text, keySizes: sizes } = message;
  if (text.length === 0 && sizes.length === 0) return message.strings;
  if (message.strings.length > 0) {
    const detail = "the str keys are in strings or in key_text, not both";
    throw new DecodeError(`${path}.key_text`, "invalid-tree", detail);
  }
  if (sizes.length % 2 !== 0) {
    const detail = `${sizes.length} sizes, two per key`;
    throw new DecodeError(`${path}.key_sizes`, "invalid-tree", detail);
  }
  const keys: string[] = [];
  let key = new Uint8Array(64);
  let length = 0;
  let read = 0;
  let total = 0;
  let previousAscii = true;
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
    total += prefix + suffix;
    if (total > maxBytes) {
      const detail = `the keys expand past the limit of ${maxBytes} bytes`;
      throw new DecodeError(`${path}.key_sizes[${i}]`, "limit-exceeded", detail);
    }
    if (prefix + suffix > key.length) {
      const grown = new Uint8Array(Math.max(prefix + suffix, 2 * key.length));
      grown.set(key.subarray(0, prefix));
      key = grown;
    }
    // Copied byte by byte: a subarray per key costs more than the copy.
    let tail: string | undefined = "";
    for (let j = 0; j < suffix; j++) {
      const byte = text[read + j];
      key[prefix + j] = byte;
      if (byte >= 0x80) tail = undefined;
      else if (tail !== undefined) tail += String.fromCharCode(byte);
    }
    read += suffix;
    length = prefix + suffix;
    // Keys such as "layer_0012" are ASCII: slicing the key before saves a UTF-8 decode.
    if (previousAscii && tail !== undefined) {
      keys.push(keys.length > 0 ? keys[keys.length - 1].slice(0, prefix) + tail : tail);
    } else {
      keys.push(decodeKey(key.subarray(0, length), `${path}.key_text`, i / 2));
      previousAscii = ascii(key, 0, length) !== undefined;
    }
  }
  if (read !== text.length) {
    const detail = `${text.length - read} bytes of key_text are left over`;
    throw new DecodeError(`${path}.key_text`, "invalid-tree", detail);
  }
  return keys;
}

/** The bytes from `start` to `end` as a string when they are all ASCII, else undefined. */
function ascii(bytes: Uint8Array, start: number, end: number): string | undefined {
  let out = "";
  for (let i = start; i < end; i++) {
    if (bytes[i] >= 0x80) return undefined;
    out += String.fromCharCode(bytes[i]);
  }
  return out;
}

function decodeKey(bytes: Uint8Array, path: string, index: number): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new DecodeError(path, "invalid-value", `key ${index} is not UTF-8`);
  }
}
