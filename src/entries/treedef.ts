import { NodeKind, type NodeType, type TreeDef } from "../../gen/ts/colocated/v1/tree";
import { DecodeError, EncodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { type ContainerNode, LEAF, NONE, PyTreeDef, type TreeNode } from "../model/tree";
import { compareCodePoints } from "../model/value-key";
import { enumNames, lowercase, type Suffixes } from "./enum-names";

/** Node kinds by name: NODE_KIND_NAMEDTUPLE is "namedtuple". */
const NODE_KINDS = enumNames<TreeNode["kind"], Lowercase<Suffixes<typeof NodeKind, "NODE_KIND_">>>(
  NodeKind,
  "NODE_KIND_",
  lowercase,
);

/**
 * What checking a TreeDef found, column by column in node order: the keys of each dict node
 * (looked up in `strings`), and the type of each namedtuple and custom node (looked up in
 * `node_types`).
 */
export interface TreeDefFacts {
  readonly dictKeys: string[];
  readonly types: NodeType[];
  /** How many leaves the tree has. */
  leafCount: number;
}

/** Where a TreeDef's check runs. */
export interface TreeDefCheckContext {
  readonly path: string;
  readonly limits: DecodeLimits;
}

/** Flattens a PyTreeDef into packed preorder columns, about a byte per node. */
export function lower(treedef: PyTreeDef): TreeDef {
  const out: TreeDef = {
    kinds: [],
    arities: [],
    strings: [],
    dictKeys: [],
    nodeTypes: [],
    typeRefs: [],
    nodeData: [],
  };
  const stringIndex = new Map<string, number>();
  const typeIndex = new Map<string, number>();
  const stack: TreeNode[] = [treedef.root];
  while (stack.length > 0) {
    const node = stack.pop() as TreeNode;
    out.kinds.push(NODE_KINDS.values[node.kind]);
    if (!("children" in node)) continue;
    out.arities.push(node.children.length);
    if (node.kind === "dict") {
      refuseDictKeys(node.keys, node.children.length);
      for (const key of node.keys)
        out.dictKeys.push(intern(stringIndex, key, () => out.strings.push(key)));
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
  return out;
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
      case NodeKind.NODE_KIND_CUSTOM: {
        const a = take("arities", i);
        arity = message.arities[a];
        if (arity > kinds.length - i - 1) {
          throw new DecodeError(
            `${path}.arities[${a}]`,
            "invalid-tree",
            `node ${i} claims ${arity} children, only ${kinds.length - i - 1} nodes follow`,
          );
        }
        checkContainer(message, kinds[i], arity, { i, a, path, take, used, facts });
        break;
      }
      default:
        throw new DecodeError(at(), "unknown-enum", `unknown node kind ${kinds[i]}`);
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
      if (kind === NodeKind.NODE_KIND_DICT) {
        node = { kind: "dict", keys: dictKeys.slice(k, k + arity), children };
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
}

/** Checks what a container node takes from the other columns, and records it in the facts. */
function checkContainer(message: TreeDef, kind: NodeKind, arity: number, at: Cursor): void {
  const { i, path } = at;
  if (kind === NodeKind.NODE_KIND_TUPLE || kind === NodeKind.NODE_KIND_LIST) return;
  if (kind === NodeKind.NODE_KIND_DICT) {
    checkDictKeys(message, arity, at);
    return;
  }
  const t = at.take("typeRefs", i);
  const ref = message.typeRefs[t];
  const type = lookUp(message.nodeTypes, ref, `${path}.type_refs[${t}]`, ["node type", "types"]);
  if (kind === NodeKind.NODE_KIND_CUSTOM) {
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

/** A dict's keys: enough of them, each a string, strictly increasing by code point. */
function checkDictKeys(message: TreeDef, arity: number, at: Cursor): void {
  const { path } = at;
  const first = at.used.dictKeys;
  if (first + arity > message.dictKeys.length) {
    throw new DecodeError(`${path}.dict_keys`, "invalid-tree", `runs out at node ${at.i}`);
  }
  at.used.dictKeys += arity;
  const keys = at.facts.dictKeys;
  for (let j = first; j < first + arity; j++) {
    const ref = message.dictKeys[j];
    const key = lookUp(message.strings, ref, `${path}.dict_keys[${j}]`, ["string", "strings"]);
    if (j > first && compareCodePoints(keys[j - 1], key) >= 0) {
      throw new DecodeError(
        `${path}.dict_keys[${j}]`,
        "invalid-tree",
        `dict keys at node ${at.i} are not sorted and distinct`,
      );
    }
    keys.push(key);
  }
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

/** A dict node's keys as lowering requires them: one per child, sorted and distinct. */
function refuseDictKeys(keys: readonly string[], arity: number): void {
  if (keys.length !== arity)
    throw new EncodeError("treedef", `a dict has ${keys.length} keys but ${arity} children`);
  for (let i = 1; i < keys.length; i++) {
    if (compareCodePoints(keys[i - 1], keys[i]) >= 0) {
      throw new EncodeError(
        "treedef",
        `dict keys must be distinct and sorted: "${keys[i - 1]}" before "${keys[i]}"`,
      );
    }
  }
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
