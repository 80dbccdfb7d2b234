import { TreeDef } from "../../gen/ts/colocated/v1/tree";
import { frontCodedSize, keyTrieSize } from "../entries/key-trie";
import { readKeyPool } from "../entries/tree-keys";
import { DEFAULT_LIMITS } from "../limits";

/** How a tree writes its str key pool: `strings` (1.0), front-coded `key_text` (1.1), or `key_trie` (1.3). */
export type KeyPoolForm = "strings" | "front-coded" | "trie";

/** A tree's dict keys as the inspector shows them: how its str key pool is written, and its size. */
export interface KeyPoolView {
  form: KeyPoolForm;
  /** The pool's str keys. */
  keys: number;
  /** The bytes the pool's fields take on the wire, tags and lengths included. */
  bytes: number;
  /** A trie's distinct labels. */
  labels?: number;
  /** A trie's nodes, repeats included. */
  nodes?: number;
  /** A trie's nodes that repeat an earlier subtrie. */
  repeats?: number;
  /** The tree's distinct dict keys that are not str (`TreeDef.keys`). */
  nonStrKeys: number;
}

/** How a decoded payload's tree writes its dict keys (`path` names the tree). */
export function keyPoolView(tree: TreeDef, path: string): KeyPoolView {
  const keys = readKeyPool(tree, path, DEFAULT_LIMITS).keys.length;
  const nonStrKeys = tree.keys.length;
  const trie = tree.keyTrie;
  if (trie !== undefined) {
    const nodes = trie.nodes.length / 2;
    const repeats = trie.nodes.filter((form, i) => i % 2 === 1 && form % 2 === 1).length;
    const labels = trie.labelSizes.length / 2;
    return { form: "trie", keys, bytes: keyTrieSize(trie), labels, nodes, repeats, nonStrKeys };
  }
  if (tree.keySizes.length > 0) {
    const bytes = frontCodedSize(tree.keyText, tree.keySizes);
    return { form: "front-coded", keys, bytes, nonStrKeys };
  }
  const bytes = TreeDef.encode(TreeDef.fromPartial({ strings: tree.strings })).finish().length;
  return { form: "strings", keys, bytes, nonStrKeys };
}

/** A key pool in one line: "873 str keys as a trie of 32 labels and 46 nodes (34 repeats), 355 bytes". */
export function describeKeyPool(pool: KeyPoolView): string {
  const parts: string[] = [];
  const written = `${formText(pool)}, ${counted(pool.bytes, "byte")}`;
  if (pool.keys > 0 || pool.bytes > 0) parts.push(`${counted(pool.keys, "str key")} ${written}`);
  if (pool.nonStrKeys > 0) parts.push(counted(pool.nonStrKeys, "non-str key"));
  return parts.join("; ") || "no dict keys";
}

function formText(pool: KeyPoolView): string {
  if (pool.form === "strings") return "as strings";
  if (pool.form === "front-coded") return "front-coded";
  const repeats = pool.repeats ? ` (${counted(pool.repeats, "repeat")})` : "";
  return `as a trie of ${counted(pool.labels ?? 0, "label")} and ${counted(pool.nodes ?? 0, "node")}${repeats}`;
}

/** 1010 bytes as "1,010 bytes", 1 as "1 byte". */
function counted(n: number, noun: string): string {
  return `${n.toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;
}
