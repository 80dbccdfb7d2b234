import { base64Encode } from "@bufbuild/protobuf/wire";
import { NodeKindSchema, TreeDefSchema } from "../../gen/es/colocated/v1/tree_pb";
import {
  type DictKey as DictKeyMessage,
  NodeKind,
  type TreeDef,
} from "../../gen/ts/colocated/v1/tree";
import { EncodeError } from "../errors";
import type { PyTreeDef, TreeNode } from "../model/tree";
import {
  type DictKey,
  dictKeyText,
  distinctKeysProblem,
  factoryText,
  Pickled,
  sortedKeysProblem,
} from "../model/tree-dict-keys";
import { fieldSince, refuseNewer, valueSince } from "../schema-version";
import { settled } from "../settled";
import { enumNames, lowercase, type Suffixes } from "./enum-names";
import { writeKeyPool } from "./tree-keys";
import { sameRefs, treeContents } from "./tree-repeats";

/**
 * Writing a PyTreeDef's columns: every node for a 1.0 target (as 1.0 wrote them), and from
 * 1.1 on shortened by REPEAT, LEAVES, front-coded keys and fresh dict keys.
 */

/** Node kinds by name: NODE_KIND_NAMEDTUPLE is "namedtuple". LEAVES and REPEAT are wire-only. */
export const TREE_NODE_KINDS = enumNames<
  TreeNode["kind"],
  Exclude<Lowercase<Suffixes<typeof NodeKind, "NODE_KIND_">>, "leaves" | "repeat">
>(NodeKind, "NODE_KIND_", lowercase);

/** The minor version that introduced the pool of keys that are not str (TreeDef.keys). */
const KEYS_SINCE = fieldSince(TreeDefSchema.field.keys);
/** The minor version of each node kind, read once: it is asked for every node written. */
const KIND_SINCE = Object.fromEntries(
  TREE_NODE_KINDS.names.map((name) => [
    name,
    valueSince(NodeKindSchema, TREE_NODE_KINDS.values[name]),
  ]),
) as Record<TreeNode["kind"], number>;
/** The int64 range of DictKey.int. */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Where a TreeDef is lowered, and the minor version the payload targets. */
export interface TreeDefLowerContext {
  readonly path: string;
  readonly targetMinorVersion: number;
}

/**
 * Lowers a PyTreeDef and says which of its leaves (by index in preorder) the columns write.
 * From 1.1 on, a subtree equal to an earlier one, leaf refs included (`leafRefs[j]` is leaf
 * j's; without them every leaf is distinct), is a REPEAT of it and writes none of its leaves,
 * and a run of leaves in a container is one LEAVES node.
 */
export function lowerWithLeaves(
  treedef: PyTreeDef,
  ctx: TreeDefLowerContext,
  leafRefs?: readonly number[],
): { treedef: TreeDef; leaves: readonly number[] } {
  // Trees are immutable, so the columns written before for this root, target and leaf refs are
  // the columns: a program sends the same tree on every call. They are settled (never changed),
  // so the message and its leaves are given again as they are, and what a caller derives from
  // them can be kept by it.
  const known = WRITTEN.get(treedef.root);
  if (
    known !== undefined &&
    known.target === ctx.targetMinorVersion &&
    sameRefs(known.refs, leafRefs)
  ) {
    return known;
  }
  const written = writeTree(treedef, ctx, leafRefs);
  const kept = {
    target: ctx.targetMinorVersion,
    refs: leafRefs && Int32Array.from(leafRefs),
    treedef: settled(written.treedef),
    leaves: settled(written.leaves),
  };
  WRITTEN.set(treedef.root, kept);
  return kept;
}

/** The columns last written for a root: its target and leaf refs, and what was written. */
const WRITTEN = new WeakMap<
  TreeNode,
  { target: number; refs?: Int32Array; treedef: TreeDef; leaves: readonly number[] }
>();

/** The columns of a tree, written anew (see lowerWithLeaves). */
function writeTree(
  treedef: PyTreeDef,
  ctx: TreeDefLowerContext,
  leafRefs?: readonly number[],
): { treedef: TreeDef; leaves: number[] } {
  const { path, targetMinorVersion: target } = ctx;
  const out: TreeDef = {
    kinds: [],
    arities: [],
    strings: [],
    dictKeys: [],
    nodeTypes: [],
    typeRefs: [],
    nodeData: [],
    keys: [],
    keyText: new Uint8Array(0),
    keySizes: [],
    freshDictKeys: false,
    keyTrie: undefined,
  };
  const writeNode = nodeWriter(out, target, path);
  const leaves: number[] = [];
  if (target < 1) {
    const stack: TreeNode[] = [treedef.root];
    while (stack.length > 0) {
      const node = stack.pop() as TreeNode;
      const i = out.kinds.length;
      writeNode(
        asVersion0Node(node, () => `${path}.kinds[${i}]`),
        i,
      );
      if (node.kind === "leaf") leaves.push(leaves.length);
      if (!("children" in node)) continue;
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    }
  } else {
    writeShortened(
      treedef.root,
      leafRefs,
      (node) => writeNode(node, out.kinds.length),
      out,
      leaves,
    );
  }
  const strings = out.strings.length;
  const final = (ref: number) => (ref < 0 ? strings - 1 - ref : ref);
  out.dictKeys = out.dictKeys.map(final);
  for (const { key } of out.keys)
    if (key?.$case === "tuple") key.value.items = key.value.items.map(final);
  if (target >= 1) {
    const poolSize = strings + out.keys.length;
    if (strings > 0) Object.assign(out, writeKeyPool(out.strings, target), { strings: [] });
    // Fresh only when the dicts use the whole pool (a tuple's items may be only its items).
    const everyKey = out.dictKeys.length === poolSize;
    if (everyKey && poolSize > 0 && out.dictKeys.every((ref, j) => ref === j)) {
      out.freshDictKeys = true;
      out.dictKeys = [];
    }
  }
  return { treedef: out, leaves };
}

/**
 * Writes a tree's nodes the 1.1 way: a container equal to an earlier one (with at least one
 * child) is a REPEAT of the first, and a run of two or more leaves in a container is LEAVES.
 */
function writeShortened(
  root: TreeNode,
  leafRefs: readonly number[] | undefined,
  writeNode: (node: TreeNode) => void,
  out: TreeDef,
  leaves: number[],
): void {
  const { nodes, ids, sizes, leaves: leafCounts } = treeContents(root, leafRefs);
  const firstAt = new Map<number, number>();
  // Children each open container still awaits, innermost last.
  const awaited: number[] = [];
  const finish = (count: number) => {
    while (awaited.length > 0) {
      const last = awaited.length - 1;
      awaited[last] -= count;
      if (awaited[last] > 0) return;
      awaited.pop();
      count = 1;
    }
  };
  let leaf = 0;
  for (let p = 0; p < nodes.length; ) {
    const node = nodes[p];
    const siblings = awaited.length > 0 ? awaited[awaited.length - 1] : 0;
    if (node.kind === "leaf") {
      let run = 1;
      while (run < siblings && nodes[p + run].kind === "leaf") run++;
      if (run >= 2) {
        out.kinds.push(NodeKind.NODE_KIND_LEAVES);
        out.arities.push(run);
      } else writeNode(node);
      for (let j = 0; j < run; j++) leaves.push(leaf++);
      p += run;
      finish(run);
      continue;
    }
    if ("children" in node && node.children.length > 0) {
      const source = firstAt.get(ids[p]);
      if (source !== undefined) {
        out.kinds.push(NodeKind.NODE_KIND_REPEAT);
        out.arities.push(source);
        leaf += leafCounts[p];
        p += sizes[p];
        finish(1);
        continue;
      }
      firstAt.set(ids[p], out.kinds.length);
      writeNode(node);
      awaited.push(node.children.length);
      p++;
      continue;
    }
    writeNode(node);
    p++;
    finish(1);
  }
}

/**
 * Writes one node's kind and what it takes from the other columns: its arity, dict keys (as
 * pool refs: a key that is not a str is -1 - its index in `keys` until `strings` is whole),
 * node type and node data.
 */
function nodeWriter(
  out: TreeDef,
  target: number,
  path: string,
): (node: TreeNode, i: number) => void {
  const stringIndex = new Map<string, number>();
  const keyIndex = new Map<string, number>();
  const typeIndex = new Map<string, number>();
  // A key that is not a str: its items first (a tuple's come before it in the pool).
  const otherRef = (key: Exclude<DictKey, string>, at: string): number => {
    const text = `${typeof key}:${dictKeyText(key)}`;
    const found = keyIndex.get(text);
    if (found !== undefined) return -1 - found;
    const message = Array.isArray(key)
      ? { key: { $case: "tuple" as const, value: { items: key.map((item) => ref(item, at)) } } }
      : keyMessage(key as Exclude<DictKey, string | readonly DictKey[]>, at);
    const index = out.keys.push(message) - 1;
    keyIndex.set(text, index);
    return -1 - index;
  };
  const ref = (key: DictKey, at: string): number =>
    typeof key === "string"
      ? intern(stringIndex, key, () => out.strings.push(key))
      : otherRef(key, at);
  const poolRef = (key: DictKey, i: number): number => {
    if (typeof key === "string") return intern(stringIndex, key, () => out.strings.push(key));
    const at = `${path}.kinds[${i}]`;
    refuseNewer(at, `dict key ${dictKeyText(key)}`, KEYS_SINCE, target);
    return otherRef(key, at);
  };
  return (node, i) => {
    const kind = TREE_NODE_KINDS.values[node.kind];
    // The path is worded only on failure: a string per node costs more than the node.
    if (KIND_SINCE[node.kind] > target)
      refuseNewer(`${path}.kinds[${i}]`, node.kind, KIND_SINCE[node.kind], target);
    out.kinds.push(kind);
    if (!("children" in node)) return;
    out.arities.push(node.children.length);
    if (node.kind === "dict" || node.kind === "ordered_dict" || node.kind === "default_dict") {
      refuseDictKeys(node.keys, node.children.length, node.kind !== "ordered_dict");
      for (const key of node.keys) out.dictKeys.push(poolRef(key, i));
      if (node.kind === "default_dict") {
        const factory = node.defaultFactory;
        const pickled = factory instanceof Pickled;
        const name = pickled ? "" : (factory ?? "");
        const pickle = pickled ? factory.bytes : new Uint8Array(0);
        const typeKey = nodeTypeKey(name, [], pickle);
        out.typeRefs.push(
          intern(typeIndex, typeKey, () => out.nodeTypes.push({ name, fields: [], pickle })),
        );
      }
    } else if (node.kind === "namedtuple" || node.kind === "custom") {
      const fields = node.kind === "namedtuple" ? [...node.fields] : [];
      if (node.kind === "namedtuple" && fields.length !== node.children.length) {
        throw new EncodeError(
          "treedef",
          `namedtuple ${node.typeName} has ${fields.length} fields but ${node.children.length} children`,
        );
      }
      const pickled = node.kind === "custom" ? node.typePickle : undefined;
      if (pickled) refuseNewer(`${path}.kinds[${i}]`, `pickled ${node.typeName}`, 1, target);
      const pickle = pickled?.bytes ?? new Uint8Array(0);
      const typeKey = nodeTypeKey(node.typeName, fields, pickle);
      out.typeRefs.push(
        intern(typeIndex, typeKey, () =>
          out.nodeTypes.push({ name: node.typeName, fields, pickle }),
        ),
      );
      if (node.kind === "custom") out.nodeData.push(node.nodeData);
    }
  };
}

/** A key that is neither a str nor a tuple, as its message. */
function keyMessage(
  key: Exclude<DictKey, string | readonly DictKey[]>,
  at: string,
): DictKeyMessage {
  if (key === null) return { key: { $case: "none", value: true } };
  if (typeof key === "boolean") return { key: { $case: "bool", value: key } };
  if (typeof key === "number") {
    if (Number.isNaN(key)) throw new EncodeError(at, "a float dict key is never NaN");
    return { key: { $case: "float", value: key } };
  }
  if (key instanceof Uint8Array) return { key: { $case: "bytes", value: key } };
  if (key instanceof Pickled) return { key: { $case: "pickle", value: key.bytes } };
  if (key < INT64_MIN || key > INT64_MAX)
    throw new EncodeError(at, `dict key ${key} does not fit in int64`);
  return { key: { $case: "int", value: key } };
}

/**
 * A node as colocated.v1.0 writes it: an ordered dict, and a defaultdict whose factory is
 * None, were custom nodes whose data is compact JSON of their aux data (as Python's JSON
 * writes it), which a 1.0 reader still reads. Other nodes are themselves.
 */
function asVersion0Node(node: TreeNode, at: () => string): TreeNode {
  if (node.kind === "ordered_dict" || node.kind === "default_dict") {
    // 1.0 wrote only keys that JSON holds (str, int, bool, None) in its custom nodes.
    for (const key of node.keys) {
      if (key === null || typeof key === "string" || typeof key === "bigint") continue;
      if (typeof key !== "boolean") refuseNewer(at(), `dict key ${dictKeyText(key)}`, 1, 0);
    }
  }
  if (node.kind === "ordered_dict") {
    const data = `j${keysJson(node.keys)}`;
    const nodeData = new TextEncoder().encode(data);
    return {
      kind: "custom",
      typeName: "collections.OrderedDict",
      nodeData,
      children: node.children,
    };
  }
  if (node.kind === "default_dict" && node.defaultFactory === null) {
    const nodeData = new TextEncoder().encode(`j[null,${keysJson(node.keys)}]`);
    return {
      kind: "custom",
      typeName: "collections.defaultdict",
      nodeData,
      children: node.children,
    };
  }
  if (node.kind === "default_dict") {
    const factory = factoryText(node.defaultFactory);
    refuseNewer(at(), `default_dict with default_factory ${JSON.stringify(factory)}`, 1, 0);
  }
  return node;
}

/** Keys as JSON, as Python's json.dumps writes them compactly (ensure_ascii off). */
function keysJson(keys: readonly DictKey[]): string {
  const items = keys.map((k) => (typeof k === "bigint" ? k.toString() : JSON.stringify(k)));
  return `[${items.join(",")}]`;
}

/** A node type's identity, (name, fields, pickle) as Python interns it. */
function nodeTypeKey(name: string, fields: readonly string[], pickle: Uint8Array): string {
  return JSON.stringify([name, fields, pickle.length > 0 ? base64Encode(pickle) : ""]);
}

function intern(index: Map<string, number>, key: string, append: () => number): number {
  let found = index.get(key);
  if (found === undefined) {
    found = append() - 1;
    index.set(key, found);
  }
  return found;
}

/**
 * A dict node's keys as lowering requires them: one per child, distinct, and sorted as JAX
 * sorts them when `sorted`.
 */
function refuseDictKeys(keys: readonly DictKey[], arity: number, sorted: boolean): void {
  if (keys.length !== arity)
    throw new EncodeError("treedef", `a dict has ${keys.length} keys but ${arity} children`);
  const problem = sorted ? sortedKeysProblem(keys) : distinctKeysProblem(keys);
  if (problem) throw new EncodeError("treedef", problem.detail);
}
