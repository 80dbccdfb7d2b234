import { base64Encode } from "@bufbuild/protobuf/wire";
import { compareCodePoints } from "./value-key";

/**
 * A Python value that travels pickled (colocated.v1.1): a dict key, or a defaultdict's
 * default_factory, with no other wire form. TypeScript never runs it; it keeps the bytes.
 */
export class Pickled {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * A Python dict key in a pytree: a str, an int (as a bigint), a bool, None (`null`), and from
 * colocated.v1.1 a float (a `number`, never NaN), bytes (a Uint8Array), a tuple of keys (an
 * array) or any other key pickled. JAX sorts a dict's keys with Python's `<`; these are the
 * kinds whose order both languages agree on (a pickled key is not compared).
 */
export type DictKey =
  | string
  | bigint
  | number
  | boolean
  | null
  | Uint8Array
  | Pickled
  | readonly DictKey[];

/** The key as Python prints it: 'a', 0, 1.5, True, None, b'x', (1, 'a'). */
export function dictKeyText(key: DictKey): string {
  if (key === null) return "None";
  if (typeof key === "boolean") return key ? "True" : "False";
  if (typeof key === "bigint") return key.toString();
  if (typeof key === "number") return floatText(key);
  if (typeof key === "string") return JSON.stringify(key);
  if (key instanceof Uint8Array) return bytesText(key);
  if (key instanceof Pickled) return `<pickled ${base64Encode(key.bytes)}>`;
  const items = key.map(dictKeyText);
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
}

/** A float as Python's repr writes it (shortest round trip; exponent past 1e16 or below 1e-4). */
function floatText(x: number): string {
  if (x === Number.POSITIVE_INFINITY) return "inf";
  if (x === Number.NEGATIVE_INFINITY) return "-inf";
  if (Number.isNaN(x)) return "nan";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exponent] = x.toExponential().split("e");
  const e = Number(exponent);
  if (e >= -4 && e < 16) {
    const fixed = String(x);
    return fixed.includes(".") ? fixed : `${fixed}.0`;
  }
  const digits = String(Math.abs(e)).padStart(2, "0");
  return `${mantissa}e${e < 0 ? "-" : "+"}${digits}`;
}

/** Bytes as Python's repr writes them: b'...' with \\xNN for what is not printable ASCII. */
function bytesText(bytes: Uint8Array): string {
  const quote = bytes.includes(0x27) && !bytes.includes(0x22) ? '"' : "'";
  let out = `b${quote}`;
  for (const b of bytes) {
    if (b === 0x5c) out += "\\\\";
    else if (b === quote.charCodeAt(0)) out += `\\${quote}`;
    else if (b === 0x09) out += "\\t";
    else if (b === 0x0a) out += "\\n";
    else if (b === 0x0d) out += "\\r";
    else if (b < 0x20 || b >= 0x7f) out += `\\x${b.toString(16).padStart(2, "0")}`;
    else out += String.fromCharCode(b);
  }
  return `${out}${quote}`;
}

/** A defaultdict's default_factory as a string equal exactly when written alike ("\0" + base64 when pickled). */
export function factoryText(factory: string | null | Pickled): string | null {
  return factory instanceof Pickled ? `\0${base64Encode(factory.bytes)}` : factory;
}

/** The key's identity under Python's equality, where 1 == 1.0 == True and 0 == -0.0 == False. */
export function dictKeyIdentity(key: DictKey): string {
  if (key === null) return "none";
  if (typeof key === "string") return `s${key}`;
  if (typeof key === "boolean") return `n${Number(key)}`;
  if (typeof key === "bigint") return `n${key}`;
  if (typeof key === "number") return Number.isInteger(key) ? `n${BigInt(key)}` : `n${String(key)}`;
  if (key instanceof Uint8Array) return `y${base64Encode(key)}`;
  if (key instanceof Pickled) return `p${base64Encode(key.bytes)}`;
  return `t${JSON.stringify(key.map(dictKeyIdentity))}`;
}

/**
 * How two keys order under Python's `<` (as JAX sorts a dict): negative, 0 or positive;
 * undefined when Python cannot compare them; "pickled" when a pickled key decides, which is
 * not compared.
 */
export function compareDictKeys(a: DictKey, b: DictKey): number | undefined | "pickled" {
  if (typeof a === "string" && typeof b === "string") return compareCodePoints(a, b);
  if (a instanceof Pickled || b instanceof Pickled) return "pickled";
  if (isNumber(a) && isNumber(b)) {
    const x = typeof a === "boolean" ? BigInt(a) : a;
    const y = typeof b === "boolean" ? BigInt(b) : b;
    // A bigint and a number compare by their exact values, as Python's int and float do.
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const x = a as readonly DictKey[];
    const y = b as readonly DictKey[];
    const n = Math.min(x.length, y.length);
    // Python compares the first items that are not == (x is x is ==).
    for (let i = 0; i < n; i++) {
      if (x[i] !== y[i] && !pythonEqual(x[i], y[i])) return compareDictKeys(x[i], y[i]);
    }
    return x.length - y.length;
  }
  return undefined;
}

/** Python's `==` between two keys (a pickled key equals only the same pickle). */
function pythonEqual(a: DictKey, b: DictKey): boolean {
  if (a === b) return true;
  if (a instanceof Pickled || b instanceof Pickled) {
    return a instanceof Pickled && b instanceof Pickled && sameBytes(a.bytes, b.bytes);
  }
  if (isNumber(a) && isNumber(b)) return compareDictKeys(a, b) === 0;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return sameBytes(a, b);
  if (Array.isArray(a) && Array.isArray(b)) {
    const x = a as readonly DictKey[];
    const y = b as readonly DictKey[];
    return x.length === y.length && x.every((item, i) => pythonEqual(item, y[i]));
  }
  return false;
}

function isNumber(key: DictKey): key is bigint | number | boolean {
  return typeof key === "bigint" || typeof key === "number" || typeof key === "boolean";
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Why keys are not in the order of a sorted dict (strictly increasing), or undefined. */
export function sortedKeysProblem(
  keys: readonly DictKey[],
): { at: number; detail: string } | undefined {
  for (let i = 1; i < keys.length; i++) {
    const order = compareDictKeys(keys[i - 1], keys[i]);
    if (order === "pickled" || (order !== undefined && order < 0)) continue;
    // Worded only on failure: a key's text for every pair would double the cost of a big dict.
    const pair = `${dictKeyText(keys[i - 1])} and ${dictKeyText(keys[i])}`;
    if (order === undefined)
      return { at: i, detail: `dict keys ${pair} cannot be sorted together` };
    return { at: i, detail: `dict keys must be distinct and sorted: ${pair}` };
  }
  return undefined;
}

/** Why an ordered dict's keys are not distinct, or undefined. */
export function distinctKeysProblem(
  keys: readonly DictKey[],
): { at: number; detail: string } | undefined {
  const seen = new Set<string>();
  for (const [i, key] of keys.entries()) {
    const identity = dictKeyIdentity(key);
    if (seen.has(identity)) return { at: i, detail: `dict key ${dictKeyText(key)} repeats` };
    seen.add(identity);
  }
  return undefined;
}

/** The keys sorted as JAX sorts a dict's, or the reason they cannot be. */
export function sortDictKeys(keys: readonly DictKey[]): DictKey[] | string {
  const sorted = [...keys];
  let failure: string | undefined;
  sorted.sort((a, b) => {
    const order = compareDictKeys(a, b);
    if (order !== undefined && order !== "pickled") return order;
    if (order === undefined)
      failure ??= `dict keys ${dictKeyText(a)} and ${dictKeyText(b)} cannot be sorted together`;
    return 0;
  });
  return failure ?? sortedKeysProblem(sorted)?.detail ?? sorted;
}
