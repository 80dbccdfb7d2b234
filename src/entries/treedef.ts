import { NodeKindSchema, NodeTypeSchema, TreeDefSchema } from "../../gen/es/colocated/v1/tree_pb";
import {
  type DictKey as DictKeyMessage,
  NodeKind,
  type NodeType,
  type TreeDef,
} from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type ContainerNode, LEAF, NONE, PyTreeDef, type TreeNode } from "../model/tree";
import {
  compareDictKeys,
  type DictKey,
  dictKeyIdentity,
  dictKeyText,
  Pickled,
  sortedKeysProblem,
} from "../model/tree-dict-keys";
import { fieldSince, newerValue, requireVersion, valueSince } from "../schema-version";
import { SCHEMA_MINOR_VERSION } from "../version";
import { readKeyPool } from "./tree-keys";
import { expandLeaves } from "./tree-repeats";
import { lowerWithLeaves, TREE_NODE_KINDS, type TreeDefLowerContext } from "./tree-write";

export { expandLeaves, lowerWithLeaves, type TreeDefLowerContext };

/** Node kinds by name; LEAVES and REPEAT are wire-only. */
const NODE_KINDS = TREE_NODE_KINDS;

/** The minor versions of the keys that are not str, of front-coded keys and of fresh keys. */
const KEYS_SINCE = fieldSince(TreeDefSchema.field.keys);
const KEY_TEXT_SINCE = fieldSince(TreeDefSchema.field.keyText);
const KEY_TRIE_SINCE = fieldSince(TreeDefSchema.field.keyTrie);
const FRESH_SINCE = fieldSince(TreeDefSchema.field.freshDictKeys);
/** The minor versions of LEAVES and REPEAT, read once: they are asked for at every such node. */
const LEAVES_SINCE = valueSince(NodeKindSchema, NodeKind.NODE_KIND_LEAVES);
const REPEAT_SINCE = valueSince(NodeKindSchema, NodeKind.NODE_KIND_REPEAT);
/** The minor version of a pickled node type (NodeType.pickle). */
const TYPE_PICKLE_SINCE = fieldSince(NodeTypeSchema.field.pickle);

/**
 * What checking a TreeDef found, column by column in node order: the keys of each dict node
 * (looked up in the key pool), and the type of each namedtuple, custom and defaultdict node
 * (looked up in `node_types`).
 */
export interface TreeDefFacts {
  readonly dictKeys: DictKey[];
  readonly types: NodeType[];
  /** How many leaves the columns write (a REPEAT's are its source's, written once). */
  leafCount: number;
  /** Where REPEATs copy leaves, as expandLeaves reads them. */
  readonly leafCopies: number[];
  /** Whether the tree has REPEAT nodes. */
  readonly repeats: boolean;
  /** The tree lifted from these facts, once it is (a decode of the same bytes reuses them). */
  lifted?: PyTreeDef;
}

/** Where a TreeDef's check runs, and the minor version its payload's header says. */
export interface TreeDefCheckContext {
  readonly path: string;
  readonly limits: DecodeLimits;
  readonly minorVersion?: number;
}

/**
 * Flattens a PyTreeDef into packed preorder columns, about a byte per node. For a 1.0 target,
 * an ordered dict or a defaultdict without a factory is the custom node 1.0 wrote for it.
 */
export function lower(
  treedef: PyTreeDef,
  ctx: TreeDefLowerContext = { path: "treedef", targetMinorVersion: SCHEMA_MINOR_VERSION },
): TreeDef {
  return lowerWithLeaves(treedef, ctx).treedef;
}

type Column = "arities" | "dictKeys" | "typeRefs" | "nodeData";

/**
 * Checks a TreeDef's columns against its kinds, without recursion and without building a
 * node. Every count is checked against the nodes actually present, so a claimed arity cannot
 * make the decoder allocate more than the payload holds. The depth is the number of
 * non-empty containers around a node, the node included. LEAVES and REPEAT nodes (1.1) are
 * counted as the nodes they expand to, from sizes known when they are met, so a subtree
 * repeated a million times costs one step per written node to refuse.
 */
export function check(message: TreeDef, ctx: TreeDefCheckContext): TreeDefFacts {
  const { path, limits } = ctx;
  const minorVersion = ctx.minorVersion ?? SCHEMA_MINOR_VERSION;
  const { kinds } = message;
  if (kinds.length > limits.maxTreeNodes) {
    throw new DecodeError(
      `${path}.kinds`,
      "limit-exceeded",
      `${kinds.length} nodes pass the limit of ${limits.maxTreeNodes}`,
    );
  }
  if (kinds.length === 0)
    throw new DecodeError(`${path}.kinds`, "invalid-tree", "a tree has at least one node");
  if (message.keyTrie !== undefined)
    requireVersion(`${path}.key_trie`, "key_trie", KEY_TRIE_SINCE, minorVersion);
  else if (message.keyText.length > 0 || message.keySizes.length > 0)
    requireVersion(`${path}.key_text`, "key_text", KEY_TEXT_SINCE, minorVersion);
  const { keys: pool, rises } = readKeyPool(message, path, limits);
  const fresh = message.freshDictKeys;
  if (fresh) {
    requireVersion(`${path}.fresh_dict_keys`, "fresh_dict_keys", FRESH_SINCE, minorVersion);
    if (message.dictKeys.length > 0) {
      const detail = "dict_keys is empty when fresh_dict_keys is set";
      throw new DecodeError(`${path}.dict_keys`, "invalid-tree", detail);
    }
  }
  let hasLeaves = false;
  let hasRepeat = false;
  for (const kind of kinds) {
    if (kind === NodeKind.NODE_KIND_LEAVES) hasLeaves = true;
    else if (kind === NodeKind.NODE_KIND_REPEAT) hasRepeat = true;
  }
  const used: Record<Column, number> = { arities: 0, dictKeys: 0, typeRefs: 0, nodeData: 0 };
  const facts: TreeDefFacts = {
    dictKeys: [],
    types: [],
    leafCount: 0,
    leafCopies: [],
    repeats: hasRepeat,
  };
  /** The index of the next value of a column, which must exist. */
  const take = (column: Column, i: number): number => {
    // Arities are taken once per container: named, not keyed, access keeps that fast.
    const next = column === "arities" ? used.arities : used[column];
    const length = column === "arities" ? message.arities.length : message[column].length;
    if (next >= length) {
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", `runs out at node ${i}`);
    }
    if (column === "arities") used.arities = next + 1;
    else used[column] = next + 1;
    return next;
  };
  const keys = new KeyPool(message.keys, pool, path, limits);
  const cursor: Cursor = {
    i: 0,
    a: 0,
    path,
    take,
    used,
    facts,
    minorVersion,
    pool,
    rises,
    keys,
    fresh,
    namedTuples: new Set(),
  };
  // Per node, only when a REPEAT may refer to it: the expanded nodes and leaves before it and
  // after its subtree (0 until it is complete), and the height of its subtree.
  // One buffer for the five: allocating typed arrays one by one cost a tenth of decoding S6.
  const n = kinds.length;
  const marks = hasRepeat ? zeroedMarks(5 * n) : undefined;
  const nodesFrom = marks?.subarray(0, n);
  const nodesTo = marks?.subarray(n, 2 * n);
  const leavesFrom = marks?.subarray(2 * n, 3 * n);
  const leavesTo = marks?.subarray(3 * n, 4 * n);
  const heights = marks?.subarray(4 * n);
  // How many children each open container still awaits, and its index, innermost last.
  const awaited: number[] = [];
  const opened: number[] = [];
  // The expanded tree so far: its nodes and its leaves.
  let total = 0;
  let expandedLeaves = 0;
  /** Counts `count` finished children of height `height`; true when the root is finished. */
  const finish = (count: number, height: number): boolean => {
    for (;;) {
      if (awaited.length === 0) return true;
      const last = awaited.length - 1;
      awaited[last] -= count;
      if (heights && height > heights[opened[last]]) heights[opened[last]] = height;
      if (awaited[last] > 0) return false;
      awaited.pop();
      const done = opened.pop() as number;
      if (heights && nodesTo && leavesTo) {
        height = ++heights[done];
        nodesTo[done] = total;
        leavesTo[done] = expandedLeaves;
      }
      count = 1;
    }
  };
  let complete = false;
  // Built only on failure: a path string (or a closure) per node would double the cost of a
  // large tree.
  const at = (i: number) => `${path}.kinds[${i}]`;
  for (let i = 0; i < kinds.length; i++) {
    if (complete) throw new DecodeError(at(i), "invalid-tree", "nodes follow the end of the tree");
    const kind = kinds[i];
    let arity = 0;
    let size = 1;
    let leaves = 0;
    let height = 0;
    let children = 1;
    switch (kind) {
      case NodeKind.NODE_KIND_LEAF:
        facts.leafCount++;
        leaves = 1;
        break;
      case NodeKind.NODE_KIND_NONE:
        break;
      case NodeKind.NODE_KIND_TUPLE:
      case NodeKind.NODE_KIND_LIST:
      case NodeKind.NODE_KIND_DICT:
      case NodeKind.NODE_KIND_NAMEDTUPLE:
      case NodeKind.NODE_KIND_CUSTOM:
      case NodeKind.NODE_KIND_ORDERED_DICT:
      case NodeKind.NODE_KIND_DEFAULT_DICT: {
        const since = valueSince(NodeKindSchema, kind);
        if (since > minorVersion)
          requireVersion(at(i), NODE_KINDS.name(kind) as string, since, minorVersion);
        const a = take("arities", i);
        arity = message.arities[a];
        // A LEAVES run is one node and many children, so only a tree without them has this bound.
        if (!hasLeaves && arity > kinds.length - i - 1) {
          throw new DecodeError(
            `${path}.arities[${a}]`,
            "invalid-tree",
            `node ${i} claims ${arity} children, only ${kinds.length - i - 1} nodes follow`,
          );
        }
        cursor.i = i;
        cursor.a = a;
        checkContainer(message, kind, arity, cursor);
        break;
      }
      case NodeKind.NODE_KIND_LEAVES: {
        if (LEAVES_SINCE > minorVersion)
          requireVersion(at(i), "leaves", LEAVES_SINCE, minorVersion);
        if (i === 0) throw new DecodeError(at(i), "invalid-tree", "a run of leaves is not a tree");
        const a = take("arities", i);
        const run = message.arities[a];
        const left = awaited.length > 0 ? awaited[awaited.length - 1] : 0;
        if (run < 2 || run > left) {
          const detail =
            run < 2
              ? `a run of ${run} leaves: runs have two or more`
              : `a run of ${run} leaves where the container awaits ${left} children`;
          throw new DecodeError(`${path}.arities[${a}]`, "invalid-tree", detail);
        }
        facts.leafCount += run;
        size = run;
        leaves = run;
        children = run;
        break;
      }
      case NodeKind.NODE_KIND_REPEAT: {
        if (REPEAT_SINCE > minorVersion)
          requireVersion(at(i), "repeat", REPEAT_SINCE, minorVersion);
        const a = take("arities", i);
        const source = message.arities[a];
        if (source >= i || !nodesTo || nodesTo[source] === 0) {
          const detail = `node ${i} repeats node ${source}, which is not a subtree that ends before it`;
          throw new DecodeError(`${path}.arities[${a}]`, "forward-reference", detail);
        }
        if (kinds[source] === NodeKind.NODE_KIND_LEAVES) {
          const detail = `node ${i} repeats node ${source}, a run of leaves`;
          throw new DecodeError(`${path}.arities[${a}]`, "invalid-tree", detail);
        }
        size = nodesTo[source] - (nodesFrom as Int32Array)[source];
        const from = (leavesFrom as Int32Array)[source];
        leaves = (leavesTo as Int32Array)[source] - from;
        height = (heights as Int32Array)[source];
        if (leaves > 0) facts.leafCopies.push(facts.leafCount, from, leaves);
        break;
      }
      default:
        throw (
          newerValue(at(i), `node kind ${kind}`, minorVersion) ??
          new DecodeError(at(i), "unknown-enum", `unknown node kind ${kind}`)
        );
    }
    if (nodesFrom && leavesFrom) {
      nodesFrom[i] = total;
      leavesFrom[i] = expandedLeaves;
    }
    total += size;
    expandedLeaves += leaves;
    if (total > limits.maxTreeNodes) {
      const detail = `the tree expands past the limit of ${limits.maxTreeNodes} nodes`;
      throw new DecodeError(at(i), "limit-exceeded", detail);
    }
    if (awaited.length + height > limits.maxTreeDepth) {
      const detail = `nesting passes the depth limit of ${limits.maxTreeDepth}`;
      throw new DecodeError(at(i), "limit-exceeded", detail);
    }
    if (arity > 0) {
      if (awaited.length >= limits.maxTreeDepth) {
        const detail = `nesting passes the depth limit of ${limits.maxTreeDepth}`;
        throw new DecodeError(at(i), "limit-exceeded", detail);
      }
      awaited.push(arity);
      opened.push(i);
      continue;
    }
    if (nodesTo && leavesTo && heights) {
      nodesTo[i] = total;
      leavesTo[i] = expandedLeaves;
      heights[i] = height;
    }
    complete = finish(children, height);
  }
  if (!complete)
    throw new DecodeError(
      `${path}.kinds`,
      "invalid-tree",
      "the tree ends before its last container is full",
    );
  for (const column of ["arities", "dictKeys", "typeRefs", "nodeData"] as const) {
    if (fresh && column === "dictKeys") continue;
    const count = message[column].length;
    if (used[column] !== count) {
      const detail = `${count} values where the kinds use ${used[column]}`;
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", detail);
    }
  }
  const poolSize = pool.length + message.keys.length;
  if (fresh && used.dictKeys !== poolSize) {
    const detail = `the dicts take ${used.dictKeys} keys of a pool of ${poolSize}`;
    throw new DecodeError(`${path}.fresh_dict_keys`, "invalid-tree", detail);
  }
  return facts;
}

/**
 * Rebuilds a checked TreeDef's nodes, without recursion; leaves and Nones share one node, and
 * a REPEAT is its source's node object itself (nodes are immutable).
 */
export function lift(message: TreeDef, ctx: { readonly facts: TreeDefFacts }): PyTreeDef {
  // Trees are immutable: a tree whose checked facts were lifted before is that tree.
  ctx.facts.lifted ??= liftNodes(message, ctx.facts);
  return ctx.facts.lifted;
}

/** The PyTreeDef of checked columns, built node by node. */
function liftNodes(message: TreeDef, facts: TreeDefFacts): PyTreeDef {
  const { kinds, arities, nodeData } = message;
  const { dictKeys, types } = facts;
  let a = 0;
  let k = 0;
  let t = 0;
  let d = 0;
  // Each open container, its children array made at its arity (pushing to a large one grew
  // it again and again), and how many children it has so far.
  const stack: { node: ContainerNode & { children: TreeNode[] }; arity: number; filled: number }[] =
    [];
  // Every node by index, kept only when a REPEAT may share one.
  const lifted: TreeNode[] | undefined = facts.repeats ? [] : undefined;
  for (let i = 0; i < kinds.length; i++) {
    let node: TreeNode;
    let arity = 0;
    let count = 1;
    const kind = kinds[i];
    if (kind === NodeKind.NODE_KIND_LEAF) {
      node = LEAF;
    } else if (kind === NodeKind.NODE_KIND_NONE) {
      node = NONE;
    } else if (kind === NodeKind.NODE_KIND_LEAVES) {
      node = LEAF;
      count = arities[a++];
    } else if (kind === NodeKind.NODE_KIND_REPEAT) {
      node = (lifted as TreeNode[])[arities[a++]];
    } else {
      arity = arities[a++];
      const children: TreeNode[] = new Array(arity);
      if (kind === NodeKind.NODE_KIND_DICT || kind === NodeKind.NODE_KIND_ORDERED_DICT) {
        const name = kind === NodeKind.NODE_KIND_DICT ? "dict" : "ordered_dict";
        node = { kind: name, keys: dictKeys.slice(k, k + arity), children };
        k += arity;
      } else if (kind === NodeKind.NODE_KIND_DEFAULT_DICT) {
        const type = types[t++];
        const defaultFactory =
          type.pickle.length > 0 ? new Pickled(type.pickle) : type.name || null;
        node = {
          kind: "default_dict",
          defaultFactory,
          keys: dictKeys.slice(k, k + arity),
          children,
        };
        k += arity;
      } else if (kind === NodeKind.NODE_KIND_NAMEDTUPLE) {
        const { name, fields } = types[t++];
        node = { kind: "namedtuple", typeName: name, fields, children };
      } else if (kind === NodeKind.NODE_KIND_CUSTOM) {
        const type = types[t++];
        const custom = { kind: "custom" as const, typeName: type.name, nodeData: nodeData[d++] };
        node =
          type.pickle.length > 0
            ? { ...custom, typePickle: new Pickled(type.pickle), children }
            : { ...custom, children };
      } else {
        node = { kind: kind === NodeKind.NODE_KIND_LIST ? "list" : "tuple", children };
      }
      if (arity > 0) {
        if (lifted) lifted[i] = node;
        stack.push({ node: node as (typeof stack)[number]["node"], arity, filled: 0 });
        continue;
      }
    }
    if (lifted) lifted[i] = node;
    // Close every container that this node completes.
    let done: TreeNode = node;
    for (;;) {
      const parent = stack.at(-1);
      if (!parent) return new PyTreeDef(done);
      const { children } = parent.node;
      for (let c = 0; c < count; c++) children[parent.filled++] = done;
      if (parent.filled < parent.arity) break;
      stack.pop();
      done = parent.node;
      count = 1;
    }
  }
  throw new Error("lift runs on a checked TreeDef, which is complete");
}

interface Cursor {
  /** The node's index in `kinds`. */
  i: number;
  /** Its index in `arities`. */
  a: number;
  path: string;
  take: (column: Column, i: number) => number;
  used: Record<Column, number>;
  facts: TreeDefFacts;
  minorVersion: number;
  /** The str keys, from `strings` or from key_text. */
  pool: readonly string[];
  /** Which str keys are above the one before them, when key_text says (readKeyPool). */
  rises: Uint8Array | undefined;
  /** The keys that are not str, read as the dicts ask for them. */
  keys: KeyPool;
  /** Whether the dicts take the pool's keys in order (fresh_dict_keys), not by dict_keys. */
  fresh: boolean;
  /** The node types checked as namedtuple types so far. */
  namedTuples: Set<number>;
}

/** Checks what a container node takes from the other columns, and records it in the facts. */
function checkContainer(message: TreeDef, kind: NodeKind, arity: number, at: Cursor): void {
  const { i, path } = at;
  if (kind === NodeKind.NODE_KIND_TUPLE || kind === NodeKind.NODE_KIND_LIST) return;
  if (kind === NodeKind.NODE_KIND_DICT || kind === NodeKind.NODE_KIND_ORDERED_DICT) {
    checkDictKeys(message, arity, at, kind === NodeKind.NODE_KIND_DICT);
    return;
  }
  if (kind === NodeKind.NODE_KIND_DEFAULT_DICT) checkDictKeys(message, arity, at, true);
  const t = at.take("typeRefs", i);
  const ref = message.typeRefs[t];
  // The path is worded only on failure, and a namedtuple's type checked once per payload.
  const type =
    message.nodeTypes[ref] ??
    lookUp(message.nodeTypes, ref, `${path}.type_refs[${t}]`, ["node type", "types"]);
  if (type.pickle.length > 0) checkPickledType(type, kind, `${path}.node_types[${ref}]`, at);
  if (kind === NodeKind.NODE_KIND_DEFAULT_DICT) {
    if (type.fields.length > 0) {
      const detail = `the default_factory of a defaultdict has no fields, node type ${ref} has`;
      throw new DecodeError(`${path}.node_types[${ref}].fields`, "invalid-value", detail);
    }
  } else if (kind === NodeKind.NODE_KIND_CUSTOM) {
    at.take("nodeData", i);
  } else {
    if (type.fields.length !== arity) {
      throw new DecodeError(
        `${path}.arities[${at.a}]`,
        "invalid-tree",
        `namedtuple ${type.name} has ${type.fields.length} fields, node ${i} has ${arity} children`,
      );
    }
    if (!at.namedTuples.has(ref)) {
      checkNamedTupleType(type, `${path}.node_types[${ref}]`);
      at.namedTuples.add(ref);
    }
  }
  at.facts.types.push(type);
}

/**
 * A dict's keys: enough of them, each in the key pool (one that is not a str only from 1.1
 * on), strictly increasing as JAX sorts them when `sorted`, else distinct.
 */
function checkDictKeys(message: TreeDef, arity: number, at: Cursor, sorted: boolean): void {
  const { path } = at;
  const first = at.used.dictKeys;
  const { pool: strings, fresh, rises } = at;
  const available = fresh ? strings.length + message.keys.length : message.dictKeys.length;
  if (first + arity > available) {
    const column = fresh ? "fresh_dict_keys" : "dict_keys";
    throw new DecodeError(`${path}.${column}`, "invalid-tree", `runs out at node ${at.i}`);
  }
  at.used.dictKeys += arity;
  const keys = at.facts.dictKeys;
  const seen = new Set<string>();
  // Worded only on failure: a path string per key would cost more than checking the key.
  const where = (j: number) => `${path}.dict_keys[${j}]`;
  for (let j = first; j < first + arity; j++) {
    // Fresh keys are the pool's in order: dict key j is pool key j.
    const ref = fresh ? j : message.dictKeys[j];
    let key: DictKey;
    if (ref < strings.length || message.keys.length === 0) {
      key = strings[ref] ?? lookUp(strings, ref, where(j), ["string", "strings"]);
    } else {
      if (KEYS_SINCE > at.minorVersion)
        requireVersion(where(j), "a dict key that is not a str", KEYS_SINCE, at.minorVersion);
      const m = ref - strings.length;
      if (m >= message.keys.length)
        lookUp(message.keys, m, where(j), ["key", "keys of strings and keys"]);
      key = at.keys.get(m);
    }
    // A fresh str key known to be above the one before it (the dict's previous key) is in order.
    const risen = fresh && rises !== undefined && j < strings.length && rises[j] === 1;
    const problem = sorted
      ? j > first && !risen && keysOrderProblem(keys[j - 1], key)
      : !addDistinct(seen, key) && `dict key ${dictKeyText(key)} repeats`;
    if (problem) throw new DecodeError(where(j), "invalid-tree", `node ${at.i}: ${problem}`);
    keys.push(key);
  }
}

/** Reused by every check of a tree of up to 2^14 nodes: zeroing it costs less than a new one. */
let sharedMarks = new Int32Array(0);

/** A zeroed Int32Array of `size` (shared by checks, which never run inside one another). */
function zeroedMarks(size: number): Int32Array {
  if (size > 5 << 14) return new Int32Array(size);
  if (sharedMarks.length < size)
    sharedMarks = new Int32Array(Math.max(size, 2 * sharedMarks.length));
  const marks = sharedMarks.subarray(0, size);
  marks.fill(0);
  return marks;
}

/** Why `a` may not come before `b` in a sorted dict, or undefined (a pickled key decides nothing). */
function keysOrderProblem(a: DictKey, b: DictKey): string | undefined {
  const order = compareDictKeys(a, b);
  if (order === "pickled" || (order !== undefined && order < 0)) return undefined;
  return sortedKeysProblem([a, b])?.detail;
}

/**
 * A node type may be pickled (1.1) as a custom node's class (its name kept, to show) or a
 * defaultdict's factory (with no name: an empty name is None's); a namedtuple never is.
 */
function checkPickledType(type: NodeType, kind: NodeKind, at: string, cursor: Cursor): void {
  if (kind === NodeKind.NODE_KIND_NAMEDTUPLE) {
    const detail = "a namedtuple type is not pickled (it is made again from its fields)";
    throw new DecodeError(`${at}.pickle`, "invalid-value", detail);
  }
  const what = "a pickled node type";
  requireVersion(`${at}.pickle`, what, TYPE_PICKLE_SINCE, cursor.minorVersion);
  if (kind === NodeKind.NODE_KIND_DEFAULT_DICT && type.name)
    throw new DecodeError(`${at}.name`, "invalid-value", "a pickled default_factory has no name");
}

/**
 * The keys that are not str, read in pool order up to the one asked for: a tuple's items are
 * keys before it, so nothing recurses, and what the tuples expand to is bounded by the tree
 * limits (n entries can nest n deep). A tuple is one frozen array, shared by every use.
 */
class KeyPool {
  readonly #values: DictKey[] = [];
  readonly #sizes: number[] = [];
  readonly #depths: number[] = [];
  #total = 0;

  constructor(
    readonly messages: readonly DictKeyMessage[],
    readonly strings: readonly string[],
    readonly path: string,
    readonly limits: DecodeLimits,
  ) {}

  get(m: number): DictKey {
    while (this.#values.length <= m) this.#read(this.#values.length);
    return this.#values[m];
  }

  #read(m: number): void {
    const at = `${this.path}.keys[${m}]`;
    const { key } = this.messages[m];
    if (!key) throw new DecodeError(at, "missing", "a dict key has no value");
    let size = 1;
    let depth = 1;
    let value: DictKey;
    if (key.$case === "none") {
      if (!key.value) throw new DecodeError(`${at}.none`, "invalid-value", "none is true when set");
      value = null;
    } else if (key.$case === "float") {
      if (Number.isNaN(key.value))
        throw new DecodeError(`${at}.float`, "invalid-value", "a float key is never NaN");
      value = key.value;
    } else if (key.$case === "pickle") {
      value = new Pickled(key.value);
    } else if (key.$case === "tuple") {
      const n = this.strings.length;
      const items: DictKey[] = [];
      for (const [i, ref] of key.value.items.entries()) {
        if (ref >= n + m) {
          const detail = `key ${n + m} of the pool holds key ${ref}, which is not before it`;
          throw new DecodeError(`${at}.tuple.items[${i}]`, "forward-reference", detail);
        }
        if (ref < n) {
          items.push(this.strings[ref]);
          size += 1;
        } else {
          items.push(this.#values[ref - n]);
          size += this.#sizes[ref - n];
          depth = Math.max(depth, this.#depths[ref - n] + 1);
        }
      }
      value = Object.freeze(items);
      if (depth > this.limits.maxTreeDepth) {
        const detail = `a tuple key nests past the limit of ${this.limits.maxTreeDepth}`;
        throw new DecodeError(at, "limit-exceeded", detail);
      }
    } else {
      value = key.value;
    }
    this.#total += size;
    if (this.#total > this.limits.maxTreeNodes) {
      const detail = `the keys expand past the limit of ${this.limits.maxTreeNodes} nodes`;
      throw new DecodeError(at, "limit-exceeded", detail);
    }
    this.#values.push(value);
    this.#sizes.push(size);
    this.#depths.push(depth);
  }
}

/** Adds a key to the keys seen; false when an equal key (in Python's sense) was there. */
function addDistinct(seen: Set<string>, key: DictKey): boolean {
  const identity = dictKeyIdentity(key);
  if (seen.has(identity)) return false;
  seen.add(identity);
  return true;
}

/** The item that the column value `ref` at `path` names, which must exist. */
function lookUp<T>(items: readonly T[], ref: number, path: string, [one, many]: string[]): T {
  const item = items[ref];
  if (item === undefined) {
    const detail = `${one} ${ref} is past the ${items.length} ${many}`;
    throw new DecodeError(path, "invalid-tree", detail);
  }
  return item;
}

/** A namedtuple type needs a name and field names Python's collections.namedtuple accepts. */
function checkNamedTupleType(type: NodeType, path: string): void {
  if (!type.name)
    throw new DecodeError(`${path}.name`, "invalid-value", "a namedtuple type has no name");
  for (const [j, field] of type.fields.entries()) {
    const problem = fieldNameProblem(field, type.fields.slice(0, j));
    if (problem) throw new DecodeError(`${path}.fields[${j}]`, "invalid-value", problem);
  }
}

/** Python's hard keywords (keyword.kwlist): collections.namedtuple refuses them as names. */
const PYTHON_KEYWORDS = new Set(
  (
    "False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try " +
    "while with yield"
  ).split(" "),
);

// str.isidentifier(): an XID_Start character or "_", then XID_Continue characters.
const IDENTIFIER = /^[\p{XID_Start}_]\p{XID_Continue}*$/u;

/** Why a namedtuple field name is refused, or undefined: as collections.namedtuple checks it. */
export function fieldNameProblem(name: string, before: readonly string[]): string | undefined {
  if (!IDENTIFIER.test(name)) return `field name "${name}" is not a Python identifier`;
  if (PYTHON_KEYWORDS.has(name)) return `field name "${name}" is a Python keyword`;
  if (name.startsWith("_")) return `field name "${name}" starts with an underscore`;
  if (before.includes(name)) return `field name "${name}" repeats`;
  return undefined;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
