import type { TreeNode } from "../model/tree";
import type { DictKey } from "../model/tree-dict-keys";

/**
 * Finding repeated subtrees for the colocated.v1.1 writer (REPEAT nodes), and expanding the
 * leaves of REPEAT nodes when reading.
 */

/** A tree's nodes in preorder, each with the id of its content and the size of its subtree. */
export interface TreeContents {
  /** Every node, in preorder (a node object used twice appears twice). */
  readonly nodes: readonly TreeNode[];
  /** Per node: equal ids exactly when the subtrees are equal, structure and leaf refs alike. */
  readonly ids: Int32Array;
  /** Per node: how many nodes its subtree has, itself included. */
  readonly sizes: Int32Array;
  /** Per node: how many leaves its subtree has. */
  readonly leaves: Int32Array;
}

/**
 * Gives every subtree an id for its content, in one bottom-up pass: a node's content is its
 * own data (kind, keys, type, node data) and its children's ids, interned in a map, so the
 * cost is linear in the nodes. Leaf `j` (in preorder) is `leafRefs[j]`; without refs, every
 * leaf differs from every other.
 */
export function treeContents(root: TreeNode, leafRefs?: readonly number[]): TreeContents {
  const nodes: TreeNode[] = [];
  const stack: TreeNode[] = [root];
  let leafCount = 0;
  while (stack.length > 0) {
    const node = stack.pop() as TreeNode;
    nodes.push(node);
    if (node.kind === "leaf") leafCount++;
    if ("children" in node) {
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    }
  }
  const n = nodes.length;
  const ids = new Int32Array(n);
  const sizes = new Int32Array(n);
  const leaves = new Int32Array(n);
  const contentIds = new Map<string, number>();
  const ownIds = new Map<string, number>();
  const intern = (map: Map<string, number>, key: string): number => {
    let id = map.get(key);
    if (id === undefined) {
      id = map.size;
      map.set(key, id);
    }
    return id;
  };
  // Reverse preorder meets every child before its parent; the stack holds finished children,
  // the first child on top.
  const done: number[] = [];
  let leaf = leafCount;
  for (let p = n - 1; p >= 0; p--) {
    const node = nodes[p];
    let key: string;
    let size = 1;
    let count = 0;
    if (node.kind === "leaf") {
      leaf--;
      key = `L${leafRefs ? leafRefs[leaf] : -1 - leaf}`;
      count = 1;
    } else if (node.kind === "none") {
      key = "N";
    } else {
      const arity = node.children.length;
      let children = "";
      for (let c = 0; c < arity; c++) {
        const child = done.pop() as number;
        children += `,${ids[child]}`;
        size += sizes[child];
        count += leaves[child];
      }
      key = `${intern(ownIds, ownContent(node))}${children}`;
    }
    ids[p] = intern(contentIds, key);
    sizes[p] = size;
    leaves[p] = count;
    done.push(p);
  }
  return { nodes, ids, sizes, leaves };
}

/** What a container holds besides its children, as a string equal exactly for equal content. */
function ownContent(node: Extract<TreeNode, { children: unknown }>): string {
  switch (node.kind) {
    case "list":
    case "tuple":
      return node.kind;
    case "dict":
    case "ordered_dict":
      return `${node.kind}${keysContent(node.keys)}`;
    case "default_dict":
      return `default_dict${JSON.stringify(node.defaultFactory)}${keysContent(node.keys)}`;
    case "namedtuple":
      return `namedtuple${JSON.stringify([node.typeName, node.fields])}`;
    case "custom":
      return `custom${JSON.stringify(node.typeName)}${node.nodeData.join(",")}`;
  }
}

/** Keys as written: an int, a bool, None and a str differ even where Python finds them equal. */
function keysContent(keys: readonly DictKey[]): string {
  let out = "";
  for (const key of keys) {
    if (typeof key === "string") out += `${key.length}:${key}`;
    else if (typeof key === "bigint") out += `i${key}`;
    else if (key === null) out += "N";
    else out += key ? "T" : "F";
  }
  return out;
}

/**
 * The expanded leaf refs: the written ones, with every REPEAT's copy of its source's leaves.
 * `copies[c..c+2]` is one copy, at the point where `until` written leaves have been read, of
 * `count` expanded leaves from index `from` (TreeDefFacts.leafCopies).
 */
export function expandLeaves(written: readonly number[], copies: readonly number[]): number[] {
  if (copies.length === 0) return written as number[];
  const out: number[] = [];
  let w = 0;
  for (let c = 0; c < copies.length; c += 3) {
    const until = copies[c];
    const from = copies[c + 1];
    const count = copies[c + 2];
    while (w < until) out.push(written[w++]);
    for (let j = from; j < from + count; j++) out.push(out[j]);
  }
  while (w < written.length) out.push(written[w++]);
  return out;
}
