import type { TreeNode } from "../model/tree";
import { type DictKey, dictKeyText } from "../model/tree-dict-keys";
import { BytesIds, SequenceIds } from "./hash-cons";

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
 * The contents last found for a tree, by its root (held weakly: the cache keeps no tree alive),
 * with the leaf refs they were found for. Trees are immutable, and a training loop encodes the
 * same specs every step: the same root with the same refs has the same contents.
 */
const FOUND = new WeakMap<TreeNode, { refs: Int32Array | undefined; contents: TreeContents }>();

/**
 * Gives every subtree an id for its content (see findContents); the contents found before for
 * this root and these leaf refs, if any. The result is shared: it is read, never changed.
 */
export function treeContents(root: TreeNode, leafRefs?: readonly number[]): TreeContents {
  const found = FOUND.get(root);
  if (found && sameRefs(found.refs, leafRefs)) return found.contents;
  const contents = findContents(root, leafRefs);
  FOUND.set(root, { refs: leafRefs && Int32Array.from(leafRefs), contents });
  return contents;
}

/** Whether leaf refs kept as an Int32Array are `b`. */
export function sameRefs(a: Int32Array | undefined, b: readonly number[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Gives every subtree an id for its content, in one bottom-up pass: a container's content is
 * its own data (kind, keys, type, node data) and its children's ids, hash-consed as a sequence
 * of ints (no string per node), so the cost is linear in the nodes. Leaf `j` (in preorder) is
 * `leafRefs[j]`; without refs, every leaf differs from every other.
 */
function findContents(root: TreeNode, leafRefs?: readonly number[]): TreeContents {
  const nodes: TreeNode[] = [];
  // Per node: its number of children, -1 for a leaf (read once here, as node shapes vary).
  const arities: number[] = [];
  const stack: TreeNode[] = [root];
  let leafCount = 0;
  while (stack.length > 0) {
    const node = stack.pop() as TreeNode;
    nodes.push(node);
    if (node.kind === "leaf") {
      leafCount++;
      arities.push(-1);
    } else if (node.kind === "none") arities.push(0);
    else {
      const { children } = node;
      arities.push(children.length);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  }
  const n = nodes.length;
  const ids = new Int32Array(n);
  const sizes = new Int32Array(n);
  const leaves = new Int32Array(n);
  const own = new OwnContents();
  const contents = new SequenceIds();
  // A container's content: its own content's id, then its children's ids. Leaves are -1 - ref
  // (or -1 - their index without refs), so they never meet a container's id, which is >= 0.
  let content = new Int32Array(16);
  // Reverse preorder meets every child before its parent; the stack holds finished children,
  // the first child on top.
  const done: number[] = [];
  let leaf = leafCount;
  for (let p = n - 1; p >= 0; p--) {
    const arity = arities[p];
    let size = 1;
    let count = 0;
    if (arity < 0) {
      leaf--;
      ids[p] = -1 - (leafRefs ? leafRefs[leaf] : leaf);
      count = 1;
    } else {
      if (arity >= content.length) content = new Int32Array(2 * arity + 1);
      content[0] = own.id(nodes[p] as Exclude<TreeNode, { kind: "leaf" }>);
      for (let c = 1; c <= arity; c++) {
        const child = done.pop() as number;
        content[c] = ids[child];
        size += sizes[child];
        count += leaves[child];
      }
      ids[p] = contents.id(content, arity + 1);
    }
    sizes[p] = size;
    leaves[p] = count;
    done.push(p);
  }
  return { nodes, ids, sizes, leaves };
}

/** Own-content tags: the first int of a node's own content. */
const Own = {
  None: 0,
  List: 1,
  Tuple: 2,
  Dict: 3,
  OrderedDict: 4,
  DefaultDict: 5,
  NamedTuple: 6,
  Custom: 7,
} as const;

/**
 * What a node holds besides its children, as ids equal exactly for equal content: a tag, then
 * the ids of its keys, names and node data.
 */
class OwnContents {
  readonly #sequences = new SequenceIds();
  readonly #names = new Map<string, number>();
  readonly #keys = new DictKeyIds();
  readonly #data = new BytesIds();
  #values = new Int32Array(16);

  id(node: Exclude<TreeNode, { kind: "leaf" }>): number {
    switch (node.kind) {
      case "none":
        return this.#tagged(Own.None);
      case "list":
        return this.#tagged(Own.List);
      case "tuple":
        return this.#tagged(Own.Tuple);
      case "dict":
      case "ordered_dict": {
        const values = this.#room(1 + node.keys.length);
        values[0] = node.kind === "dict" ? Own.Dict : Own.OrderedDict;
        return this.#withKeys(values, 1, node.keys);
      }
      case "default_dict": {
        const values = this.#room(2 + node.keys.length);
        values[0] = Own.DefaultDict;
        values[1] = this.#factory(node.defaultFactory);
        return this.#withKeys(values, 2, node.keys);
      }
      case "namedtuple": {
        // The fields' count is the sequence's length, less the tag and name.
        const { fields } = node;
        const values = this.#room(2 + fields.length);
        values[0] = Own.NamedTuple;
        values[1] = this.#name(node.typeName);
        for (let f = 0; f < fields.length; f++) values[2 + f] = this.#name(fields[f]);
        return this.#sequences.id(values, 2 + fields.length);
      }
      case "custom": {
        const values = this.#values;
        values[0] = Own.Custom;
        values[1] = this.#name(node.typeName);
        values[2] = this.#data.id(node.nodeData);
        // A class pickled (1.1, a local class) is told apart by its bytes.
        values[3] = node.typePickle ? this.#data.id(node.typePickle.bytes) : -1;
        return this.#sequences.id(values, 4);
      }
    }
  }

  #tagged(tag: number): number {
    this.#values[0] = tag;
    return this.#sequences.id(this.#values, 1);
  }

  /** A default_factory's id: its name's, -1 for None, below -1 when pickled (by its bytes). */
  #factory(factory: unknown): number {
    if (factory === null || typeof factory === "string") return this.#name(factory);
    return -2 - this.#data.id((factory as { readonly bytes: Uint8Array }).bytes);
  }

  /** The scratch array, with room for `length` values. */
  #room(length: number): Int32Array {
    if (length > this.#values.length) this.#values = new Int32Array(2 * length);
    return this.#values;
  }

  #withKeys(values: Int32Array, from: number, keys: readonly DictKey[]): number {
    for (let k = 0; k < keys.length; k++) values[from + k] = this.#keys.id(keys[k]);
    return this.#sequences.id(values, from + keys.length);
  }

  /** A name's id; -1 for none (a defaultdict without a factory). */
  #name(name: string | null): number {
    if (name === null) return -1;
    let id = this.#names.get(name);
    if (id === undefined) {
      id = this.#names.size;
      this.#names.set(name, id);
    }
    return id;
  }
}

/**
 * Dict keys' ids, equal exactly when the keys are written alike: an int, a bool, None and a
 * str differ even where Python finds them equal (1 and True). str, int (a bigint), bool and
 * None are the Map's own keys (its SameValueZero is that equality); any other kind of key is
 * compared by `writtenKey`.
 */
class DictKeyIds {
  readonly #byValue = new Map<DictKey, number>();
  readonly #byWritten = new Map<string, number>();
  #count = 0;

  id(key: DictKey): number {
    const primitive =
      key === null ||
      typeof key === "string" ||
      typeof key === "bigint" ||
      typeof key === "boolean";
    const map: Map<unknown, number> = primitive ? this.#byValue : this.#byWritten;
    const at = primitive ? key : writtenKey(key);
    let id = map.get(at);
    if (id === undefined) {
      id = this.#count++;
      map.set(at, id);
    }
    return id;
  }
}

/**
 * A key of another kind (not str, int, bool or None) as a string, equal exactly when the keys
 * are written alike: its JS type, then its text as Python prints it.
 */
export function writtenKey(key: DictKey): string {
  return `${typeof key}:${dictKeyText(key)}`;
}

/**
 * The expanded leaves: the written ones (refs, or what they refer to), with every REPEAT's
 * copy of its source's leaves. `copies[c..c+2]` is one copy, at the point where `until`
 * written leaves have been read, of `count` expanded leaves from index `from`
 * (TreeDefFacts.leafCopies).
 */
export function expandLeaves<T>(written: readonly T[], copies: readonly number[]): T[] {
  if (copies.length === 0) return written as T[];
  let total = written.length;
  for (let c = 2; c < copies.length; c += 3) total += copies[c];
  const out = new Array<T>(total);
  let w = 0;
  let o = 0;
  for (let c = 0; c < copies.length; c += 3) {
    const until = copies[c];
    const from = copies[c + 1];
    const count = copies[c + 2];
    while (w < until) out[o++] = written[w++];
    for (let j = from; j < from + count; j++) out[o++] = out[j];
  }
  while (w < written.length) out[o++] = written[w++];
  return out;
}
