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
  const encoded = keys.map((key) => utf8.encode(key));
  const keySizes: number[] = [];
  let total = 0;
  let previous = new Uint8Array(0);
  for (const bytes of encoded) {
    const limit = Math.min(previous.length, bytes.length);
    let prefix = 0;
    while (prefix < limit && previous[prefix] === bytes[prefix]) prefix++;
    keySizes.push(prefix, bytes.length - prefix);
    total += bytes.length - prefix;
    previous = bytes;
  }
  const keyText = new Uint8Array(total);
  let at = 0;
  for (let i = 0; i < encoded.length; i++) {
    keyText.set(encoded[i].subarray(keySizes[2 * i]), at);
    at += keySizes[2 * i + 1];
  }
  return { keyText, keySizes };
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
    key.set(text.subarray(read, read + suffix), prefix);
    read += suffix;
    length = prefix + suffix;
    keys.push(decodeKey(key.subarray(0, length), `${path}.key_text`, i / 2));
  }
  if (read !== text.length) {
    const detail = `${text.length - read} bytes of key_text are left over`;
    throw new DecodeError(`${path}.key_text`, "invalid-tree", detail);
  }
  return keys;
}

function decodeKey(bytes: Uint8Array, path: string, index: number): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new DecodeError(path, "invalid-value", `key ${index} is not UTF-8`);
  }
}
