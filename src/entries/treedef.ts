import { NodeKindSchema, TreeDefSchema } from "../../gen/es/colocated/v1/tree_pb";
import {
  type DictKey as DictKeyMessage,
  NodeKind,
  type NodeType,
  type TreeDef,
} from "../../gen/ts/colocated/v1/tree";
import { DecodeError, EncodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type ContainerNode, LEAF, NONE, PyTreeDef, type TreeNode } from "../model/tree";
import {
  type DictKey,
  dictKeyIdentity,
  dictKeyText,
  distinctKeysProblem,
  sortedKeysProblem,
} from "../model/tree-dict-keys";
import { fieldSince, newerValue, refuseNewer, requireVersion, valueSince } from "../schema-version";
import { SCHEMA_MINOR_VERSION } from "../version";
import { enumNames, lowercase, type Suffixes } from "./enum-names";

/** Node kinds by name: NODE_KIND_NAMEDTUPLE is "namedtuple". LEAVES and REPEAT are wire-only. */
const NODE_KINDS = enumNames<
  TreeNode["kind"],
  Exclude<Lowercase<Suffixes<typeof NodeKind, "NODE_KIND_">>, "leaves" | "repeat">
>(NodeKind, "NODE_KIND_", lowercase);

/** The minor version that introduced the pool of keys that are not str (TreeDef.keys). */
const KEYS_SINCE = fieldSince(TreeDefSchema.field.keys);

/** The int64 range of DictKey.int. */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * What checking a TreeDef found, column by column in node order: the keys of each dict node
 * (looked up in the key pool), and the type of each namedtuple, custom and defaultdict node
 * (looked up in `node_types`).
 */
export interface TreeDefFacts {
  readonly dictKeys: DictKey[];
  readonly types: NodeType[];
  /** How many leaves the tree has. */
  leafCount: number;
}

/** Where a TreeDef's check runs, and the minor version its payload's header says. */
export interface TreeDefCheckContext {
  readonly path: string;
  readonly limits: DecodeLimits;
  readonly minorVersion?: number;
}

/** Where a TreeDef is lowered, and the minor version the payload targets. */
export interface TreeDefLowerContext {
  readonly path: string;
  readonly targetMinorVersion: number;
}

/**
 * Flattens a PyTreeDef into packed preorder columns, about a byte per node. For a 1.0 target,
 * an ordered dict or a defaultdict without a factory is the custom node 1.0 wrote for it.
 */
export function lower(
  treedef: PyTreeDef,
  ctx: TreeDefLowerContext = { path: "treedef", targetMinorVersion: SCHEMA_MINOR_VERSION },
): TreeDef {
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
  };
  const stringIndex = new Map<string, number>();
  const keyIndex = new Map<string, number>();
  const typeIndex = new Map<string, number>();
  // A key that is not a str is written as -1 - (its index in `keys`) until `strings` is whole.
  const poolRef = (key: DictKey, at: string): number => {
    if (typeof key === "string") return intern(stringIndex, key, () => out.strings.push(key));
    refuseNewer(at, `dict key ${dictKeyText(key)}`, KEYS_SINCE, target);
    const message = keyMessage(key, at);
    return -1 - intern(keyIndex, `${typeof key}${key}`, () => out.keys.push(message));
  };
  const stack: TreeNode[] = [treedef.root];
  while (stack.length > 0) {
    let node = stack.pop() as TreeNode;
    const at = `${path}.kinds[${out.kinds.length}]`;
    if (target < 1) node = asVersion0Node(node, at);
    const kind = NODE_KINDS.values[node.kind];
    refuseNewer(at, node.kind, valueSince(NodeKindSchema, kind), target);
    out.kinds.push(kind);
    if (!("children" in node)) continue;
    out.arities.push(node.children.length);
    if (node.kind === "dict" || node.kind === "ordered_dict" || node.kind === "default_dict") {
      refuseDictKeys(node.keys, node.children.length, node.kind !== "ordered_dict");
      for (const key of node.keys) out.dictKeys.push(poolRef(key, at));
      if (node.kind === "default_dict") {
        const name = node.defaultFactory ?? "";
        const typeKey = JSON.stringify([name, []]);
        out.typeRefs.push(
          intern(typeIndex, typeKey, () => out.nodeTypes.push({ name, fields: [] })),
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
      const typeKey = JSON.stringify([node.typeName, fields]);
      out.typeRefs.push(
        intern(typeIndex, typeKey, () => out.nodeTypes.push({ name: node.typeName, fields })),
      );
      if (node.kind === "custom") out.nodeData.push(node.nodeData);
    }
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
  }
  const strings = out.strings.length;
  out.dictKeys = out.dictKeys.map((ref) => (ref < 0 ? strings - 1 - ref : ref));
  return out;
}

/** A key that is not a str, as its message. */
function keyMessage(key: Exclude<DictKey, string>, at: string): DictKeyMessage {
  if (key === null) return { key: { $case: "none", value: true } };
  if (typeof key === "boolean") return { key: { $case: "bool", value: key } };
  if (key < INT64_MIN || key > INT64_MAX)
    throw new EncodeError(at, `dict key ${key} does not fit in int64`);
  return { key: { $case: "int", value: key } };
}

/**
 * A node as colocated.v1.0 writes it: an ordered dict, and a defaultdict whose factory is
 * None, were custom nodes whose data is compact JSON of their aux data (as Python's JSON
 * writes it), which a 1.0 reader still reads. Other nodes are themselves.
 */
function asVersion0Node(node: TreeNode, at: string): TreeNode {
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
    refuseNewer(at, `default_dict with default_factory ${node.defaultFactory}`, 1, 0);
  }
  return node;
}

/** Keys as JSON, as Python's json.dumps writes them compactly (ensure_ascii off). */
function keysJson(keys: readonly DictKey[]): string {
  const items = keys.map((k) => (typeof k === "bigint" ? k.toString() : JSON.stringify(k)));
  return `[${items.join(",")}]`;
}

type Column = "arities" | "dictKeys" | "typeRefs" | "nodeData";

/**
 * Checks a TreeDef's columns against its kinds, without recursion and without building a
 * node. Every count is checked against the nodes actually present, so a claimed arity cannot
 * make the decoder allocate more than the payload holds. The depth is the number of
 * non-empty containers around a node, the node included.
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
  const used: Record<Column, number> = { arities: 0, dictKeys: 0, typeRefs: 0, nodeData: 0 };
  const facts: TreeDefFacts = { dictKeys: [], types: [], leafCount: 0 };
  /** The index of the next value of a column, which must exist. */
  const take = (column: Column, i: number): number => {
    if (used[column] >= message[column].length) {
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", `runs out at node ${i}`);
    }
    return used[column]++;
  };
  // How many children each open container still awaits, innermost last.
  const awaited: number[] = [];
  let complete = false;
  for (let i = 0; i < kinds.length; i++) {
    // Built only on failure: a path string per node would double the cost of a large tree.
    const at = () => `${path}.kinds[${i}]`;
    if (complete) throw new DecodeError(at(), "invalid-tree", "nodes follow the end of the tree");
    let arity = 0;
    switch (kinds[i]) {
      case NodeKind.NODE_KIND_LEAF:
        facts.leafCount++;
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
        const since = valueSince(NodeKindSchema, kinds[i]);
        if (since > 0)
          requireVersion(at(), NODE_KINDS.name(kinds[i]) as string, since, minorVersion);
        const a = take("arities", i);
        arity = message.arities[a];
        if (arity > kinds.length - i - 1) {
          throw new DecodeError(
            `${path}.arities[${a}]`,
            "invalid-tree",
            `node ${i} claims ${arity} children, only ${kinds.length - i - 1} nodes follow`,
          );
        }
        checkContainer(message, kinds[i], arity, { i, a, path, take, used, facts, minorVersion });
        break;
      }
      default:
        throw (
          newerValue(at(), `node kind ${kinds[i]}`, minorVersion) ??
          new DecodeError(at(), "unknown-enum", `unknown node kind ${kinds[i]}`)
        );
    }
    if (arity > 0) {
      if (awaited.length >= limits.maxTreeDepth) {
        const detail = `nesting passes the depth limit of ${limits.maxTreeDepth}`;
        throw new DecodeError(at(), "limit-exceeded", detail);
      }
      awaited.push(arity);
      continue;
    }
    complete = closeContainers(awaited);
  }
  if (!complete)
    throw new DecodeError(
      `${path}.kinds`,
      "invalid-tree",
      "the tree ends before its last container is full",
    );
  for (const column of ["arities", "dictKeys", "typeRefs", "nodeData"] as const) {
    const count = message[column].length;
    if (used[column] !== count) {
      const detail = `${count} values where the kinds use ${used[column]}`;
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", detail);
    }
  }
  return facts;
}

/** Rebuilds a checked TreeDef's nodes, without recursion; leaves and Nones share one node. */
export function lift(message: TreeDef, ctx: { readonly facts: TreeDefFacts }): PyTreeDef {
  const { kinds, arities, nodeData } = message;
  const { dictKeys, types } = ctx.facts;
  let a = 0;
  let k = 0;
  let t = 0;
  let d = 0;
  const stack: { node: ContainerNode & { children: TreeNode[] }; arity: number }[] = [];
  for (let i = 0; i < kinds.length; i++) {
    let node: TreeNode;
    let arity = 0;
    const kind = kinds[i];
    if (kind === NodeKind.NODE_KIND_LEAF) {
      node = LEAF;
    } else if (kind === NodeKind.NODE_KIND_NONE) {
      node = NONE;
    } else {
      arity = arities[a++];
      const children: TreeNode[] = [];
      if (kind === NodeKind.NODE_KIND_DICT || kind === NodeKind.NODE_KIND_ORDERED_DICT) {
        const name = kind === NodeKind.NODE_KIND_DICT ? "dict" : "ordered_dict";
        node = { kind: name, keys: dictKeys.slice(k, k + arity), children };
        k += arity;
      } else if (kind === NodeKind.NODE_KIND_DEFAULT_DICT) {
        const defaultFactory = types[t++].name || null;
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
        const typeName = types[t++].name;
        node = { kind: "custom", typeName, nodeData: nodeData[d++], children };
      } else {
        node = { kind: kind === NodeKind.NODE_KIND_LIST ? "list" : "tuple", children };
      }
      if (arity > 0) {
        stack.push({ node: node as (typeof stack)[number]["node"], arity });
        continue;
      }
    }
    // Close every container that this node completes.
    let done: TreeNode = node;
    for (;;) {
      const parent = stack.at(-1);
      if (!parent) return new PyTreeDef(done);
      parent.node.children.push(done);
      if (parent.node.children.length < parent.arity) break;
      stack.pop();
      done = parent.node;
    }
  }
  throw new Error("lift runs on a checked TreeDef, which is complete");
}

/** Counts a finished node against the containers awaiting it; true when the root is finished. */
function closeContainers(awaited: number[]): boolean {
  for (;;) {
    if (awaited.length === 0) return true;
    const last = awaited.length - 1;
    awaited[last]--;
    if (awaited[last] > 0) return false;
    awaited.pop();
  }
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
  const type = lookUp(message.nodeTypes, ref, `${path}.type_refs[${t}]`, ["node type", "types"]);
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
    checkNamedTupleType(type, `${path}.node_types[${ref}]`);
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
  if (first + arity > message.dictKeys.length) {
    throw new DecodeError(`${path}.dict_keys`, "invalid-tree", `runs out at node ${at.i}`);
  }
  at.used.dictKeys += arity;
  const keys = at.facts.dictKeys;
  const { strings } = message;
  const seen = new Set<string>();
  for (let j = first; j < first + arity; j++) {
    const ref = message.dictKeys[j];
    const where = `${path}.dict_keys[${j}]`;
    let key: DictKey;
    if (ref < strings.length || message.keys.length === 0) {
      key = lookUp(strings, ref, where, ["string", "strings"]);
    } else {
      requireVersion(where, "a dict key that is not a str", KEYS_SINCE, at.minorVersion);
      const m = ref - strings.length;
      const item = lookUp(message.keys, m, where, ["key", "keys of strings and keys"]);
      key = keyValue(item, `${path}.keys[${m}]`);
    }
    const problem = sorted
      ? j > first && keysOrderProblem(keys[j - 1], key)
      : !addDistinct(seen, key) && `dict key ${dictKeyText(key)} repeats`;
    if (problem) throw new DecodeError(where, "invalid-tree", `node ${at.i}: ${problem}`);
    keys.push(key);
  }
}

/** Why `a` may not come before `b` in a sorted dict, or undefined. */
function keysOrderProblem(a: DictKey, b: DictKey): string | undefined {
  return sortedKeysProblem([a, b])?.detail;
}

/** Adds a key to the keys seen; false when an equal key (in Python's sense) was there. */
function addDistinct(seen: Set<string>, key: DictKey): boolean {
  const identity = dictKeyIdentity(key);
  if (seen.has(identity)) return false;
  seen.add(identity);
  return true;
}

/** A DictKey message's value: one of its cases, and `none` only as true. */
function keyValue(message: DictKeyMessage, path: string): DictKey {
  const { key } = message;
  if (!key) throw new DecodeError(path, "missing", "a dict key has no value");
  if (key.$case === "none") {
    if (!key.value) throw new DecodeError(`${path}.none`, "invalid-value", "none is true when set");
    return null;
  }
  return key.value;
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

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
