/**
 * The words of a difference, written alike in TypeScript and Python (diff/describe.py):
 * values as Python prints them where a reader knows them that way (PartitionSpec('x', None),
 * shapes as tuples), each rule simple enough that both languages follow it exactly.
 */
import type { PartitionSpecEntry } from "../model/partition-spec";
import { UNCONSTRAINED } from "../model/partition-spec";
import type { Json } from "./payload-diff";

/**
 * A str as Python's repr writes it, for the texts both languages must agree on: single quotes
 * unless it holds ' and no ", and \\, the quote, \t, \n, \r and \xNN (below 0x20 and 0x7f)
 * escaped. Other characters are kept, where repr would escape what it cannot print.
 */
export function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const code = ch.codePointAt(0) as number;
    if (ch === "\\" || ch === quote) out += `\\${ch}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + quote;
}

/** Items as a Python tuple: (1, 2), (1,), (). */
export function pyTuple(items: readonly string[]): string {
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
}

/** A shape, as JAX prints one: (8, 4). */
export function shapeText(shape: readonly number[]): string {
  return pyTuple(shape.map(String));
}

/** A count with its noun: "1 leaf", "1,000 leaves". */
export function countText(n: number, one: string, many: string): string {
  return `${thousands(n)} ${n === 1 ? one : many}`;
}

/** 1234567 as "1,234,567". */
export function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** The first `max` texts, then how many more: "'a', 'b' (and 3 more)". */
export function listText(texts: readonly string[], max = 8): string {
  const shown = texts.slice(0, max).join(", ");
  return texts.length > max ? `${shown} (and ${thousands(texts.length - max)} more)` : shown;
}

/** A PartitionSpec's entries as the result holds them: null, "x", ["x", "y"], {"unconstrained": true}. */
export function specEntriesJson(entries: readonly PartitionSpecEntry[]): Json {
  return entries.map((e) =>
    e === UNCONSTRAINED ? { unconstrained: true } : (e as string | string[] | null),
  );
}

/** A PartitionSpec's entries as Python prints them: ('data', None, ('x', 'y'), UNCONSTRAINED). */
export function specEntriesText(entries: Json): string {
  return pyTuple(
    (entries as Json[]).map((e) => {
      if (e === null) return "None";
      if (typeof e === "string") return pyStr(e);
      if (Array.isArray(e)) return pyTuple(e.map((a) => pyStr(a as string)));
      return "UNCONSTRAINED";
    }),
  );
}

/** An axis set (unreduced, reduced): {'x', 'y'}, or {} when empty. */
export function axisSetText(axes: readonly string[]): string {
  return `{${axes.map(pyStr).join(", ")}}`;
}

/** A memory kind, the default (null) as JAX names it. */
export function memoryKindText(kind: string | null): string {
  return kind ?? "device";
}

/** "a to b": the two sides of a change in words. */
export function change(a: string, b: string): string {
  return `${a} to ${b}`;
}
