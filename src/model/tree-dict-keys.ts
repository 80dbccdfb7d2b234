import { compareCodePoints } from "./value-key";

/**
 * A Python dict key in a pytree: a str, an int (as a bigint), a bool, or None (`null`).
 * JAX sorts a dict's keys; these are the kinds whose order both languages agree on.
 */
export type DictKey = string | bigint | boolean | null;

/** The key as Python prints it: 'a', 0, True, None. */
export function dictKeyText(key: DictKey): string {
  if (key === null) return "None";
  if (typeof key === "boolean") return key ? "True" : "False";
  if (typeof key === "bigint") return key.toString();
  return JSON.stringify(key);
}

/** The key's identity under Python's equality, where 1 == True and 0 == False. */
export function dictKeyIdentity(key: DictKey): string {
  if (key === null) return "none";
  if (typeof key === "string") return `s${key}`;
  return `n${typeof key === "boolean" ? Number(key) : key}`;
}

/** Orders two keys as JAX's sort does, or undefined when Python cannot compare them. */
export function compareDictKeys(a: DictKey, b: DictKey): number | undefined {
  if (typeof a === "string" && typeof b === "string") return compareCodePoints(a, b);
  if (a === null || b === null || typeof a === "string" || typeof b === "string") return undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Why keys are not in the order of a sorted dict (strictly increasing), or undefined. */
export function sortedKeysProblem(
  keys: readonly DictKey[],
): { at: number; detail: string } | undefined {
  for (let i = 1; i < keys.length; i++) {
    const order = compareDictKeys(keys[i - 1], keys[i]);
    if (order !== undefined && order < 0) continue;
    // Worded only on failure: a key's text for every pair would double the cost of a big dict.
    const pair = `${dictKeyText(keys[i - 1])} and ${dictKeyText(keys[i])}`;
    if (order === undefined)
      return { at: i, detail: `dict keys ${pair} cannot be sorted together` };
    if (order >= 0) return { at: i, detail: `dict keys must be distinct and sorted: ${pair}` };
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
    if (order !== undefined) return order;
    failure ??= `dict keys ${dictKeyText(a)} and ${dictKeyText(b)} cannot be sorted together`;
    return 0;
  });
  return failure ?? sortedKeysProblem(sorted)?.detail ?? sorted;
}
