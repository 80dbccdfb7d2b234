import { TreeDefSchema } from "../../gen/es/colocated/v1/tree_pb";
import type { TreeDef } from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { fieldSince } from "../schema-version";
import { frontCode } from "./front-code";
import {
  decodeKey,
  frontCodedSize,
  keyTrieSize,
  measureKeyTrie,
  readKeyTrie,
  sliceAsciiKeys,
} from "./key-trie";

/** The minor version that introduced the key trie. */
const KEY_TRIE_SINCE = fieldSince(TreeDefSchema.field.keyTrie);

/**
 * The str key pool of a TreeDef: `strings` (1.0), front-coded in `key_text` (1.1) or a trie of
 * key parts (1.3), whichever the writer found smallest.
 */

/**
 * The str key pool as a TreeDef writes it for a target: a trie of key parts (1.3) when that is
 * smaller, else front-coded (1.1).
 */
export function writeKeyPool(
  keys: readonly string[],
  target: number,
): Pick<TreeDef, "keyText" | "keySizes" | "keyTrie"> {
  if (target < KEY_TRIE_SINCE) return { ...frontCode(keys), keyTrie: undefined };
  // The trie's builder knows front coding's size when every key is ASCII; else it is written.
  const { trie, frontCodedSize: known } = measureKeyTrie(keys);
  const coded = known === undefined ? frontCode(keys) : undefined;
  const codedSize = coded ? frontCodedSize(coded.keyText, coded.keySizes) : (known as number);
  if (keyTrieSize(trie) < codedSize)
    return { keyText: new Uint8Array(0), keySizes: [], keyTrie: trie };
  return { ...(coded ?? frontCode(keys)), keyTrie: undefined };
}

/** A TreeDef's str keys, and (front-coded) which are above the key before them, by code point. */
export interface KeyPoolRead {
  keys: readonly string[];
  /** rises[k] is 1 when key k is above key k - 1 (0 for key 0); absent for `strings`. */
  rises?: Uint8Array;
}

/**
 * The str key pool a TreeDef carries: `strings` as written, or its key_text and key_sizes or its
 * key_trie read back. Every size is checked before a key is built, and the bytes all keys
 * expand to count against the payload limit (a prefix can repeat a long key many times).
 */
export function readKeyPool(message: TreeDef, path: string, limits: DecodeLimits): KeyPoolRead {
  const { keyText: text, keySizes: sizes, keyTrie: trie } = message;
  const maxBytes = limits.maxPayloadBytes;
  if (trie !== undefined) {
    if (message.strings.length > 0 || text.length > 0 || sizes.length > 0) {
      const detail = "the str keys are in one of strings, key_text and key_trie";
      throw new DecodeError(`${path}.key_trie`, "invalid-tree", detail);
    }
    return readKeyTrie(trie, path, { maxKeys: limits.maxTreeNodes, maxBytes });
  }
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
  sliceAsciiKeys(all, starts, ascii, keys);
  return { keys, rises };
}
