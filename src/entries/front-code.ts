/**
 * Front coding (colocated.v1.1): sorted strings such as "layer_0001", "layer_0002" share long
 * prefixes, so each is written as the UTF-8 bytes after its common prefix with the one before.
 * The key pool and the key trie's labels are written so.
 */

const utf8 = new TextEncoder();

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
