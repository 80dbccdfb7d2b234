import { NodeKind, type NodeType, type TreeDef } from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { LEAF, NONE, type TreeNode } from "../model/tree";
import { compareCodePoints } from "../model/value-key";
import { fieldNameProblem } from "./python-names";

interface OpenNode {
  node: TreeNode & { children: TreeNode[] };
  arity: number;
}

type Column = "arities" | "dictKeys" | "typeRefs" | "nodeData";

/**
 * Checks a TreeDef's columns against its kinds and rebuilds its nodes, without recursion.
 * Every count is checked against the nodes actually present, so a claimed arity cannot
 * make the decoder allocate more than the payload holds. The depth is the number of
 * non-empty containers around a node, the node included.
 */
export function checkTreeDef(message: TreeDef, path: string, limits: DecodeLimits): TreeNode {
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
  /** The index of the next value of a column, which must exist. */
  const take = (column: Column, i: number): number => {
    if (used[column] >= message[column].length) {
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", `runs out at node ${i}`);
    }
    return used[column]++;
  };
  const stack: OpenNode[] = [];
  let root: TreeNode | undefined;
  for (let i = 0; i < kinds.length; i++) {
    // Built only on failure: a path string per node would double the cost of a large tree.
    const at = () => `${path}.kinds[${i}]`;
    if (root !== undefined)
      throw new DecodeError(at(), "invalid-tree", "nodes follow the end of the tree");
    let node: TreeNode;
    let arity = 0;
    switch (kinds[i]) {
      case NodeKind.NODE_KIND_LEAF:
        node = LEAF;
        break;
      case NodeKind.NODE_KIND_NONE:
        node = NONE;
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
        node = openContainer(message, kinds[i], arity, { i, a, path, take, used });
        break;
      }
      default:
        throw new DecodeError(at(), "unknown-enum", `unknown node kind ${kinds[i]}`);
    }
    if (arity > 0) {
      if (stack.length >= limits.maxTreeDepth) {
        const detail = `nesting passes the depth limit of ${limits.maxTreeDepth}`;
        throw new DecodeError(at(), "limit-exceeded", detail);
      }
      stack.push({ node: node as OpenNode["node"], arity });
      continue;
    }
    // Close every container that this node completes.
    let done: TreeNode = node;
    for (;;) {
      const parent = stack.at(-1);
      if (!parent) {
        root = done;
        break;
      }
      parent.node.children.push(done);
      if (parent.node.children.length < parent.arity) break;
      stack.pop();
      done = parent.node;
    }
  }
  if (root === undefined)
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
  return root;
}

interface Cursor {
  /** The node's index in `kinds`. */
  i: number;
  /** Its index in `arities`. */
  a: number;
  path: string;
  take: (column: Column, i: number) => number;
  used: Record<Column, number>;
}

function openContainer(message: TreeDef, kind: NodeKind, arity: number, at: Cursor): TreeNode {
  const { i, path } = at;
  const children: TreeNode[] = [];
  switch (kind) {
    case NodeKind.NODE_KIND_TUPLE:
      return { kind: "tuple", children };
    case NodeKind.NODE_KIND_LIST:
      return { kind: "list", children };
    case NodeKind.NODE_KIND_DICT:
      return { kind: "dict", keys: dictKeys(message, arity, at), children };
    default: {
      const t = at.take("typeRefs", i);
      const ref = message.typeRefs[t];
      const type = message.nodeTypes[ref];
      if (type === undefined) {
        throw new DecodeError(
          `${path}.type_refs[${t}]`,
          "invalid-tree",
          `node type ${ref} is past the ${message.nodeTypes.length} types`,
        );
      }
      if (kind === NodeKind.NODE_KIND_CUSTOM) {
        const nodeData = message.nodeData[at.take("nodeData", i)];
        return { kind: "custom", typeName: type.name, nodeData, children };
      }
      if (type.fields.length !== arity) {
        throw new DecodeError(
          `${path}.arities[${at.a}]`,
          "invalid-tree",
          `namedtuple ${type.name} has ${type.fields.length} fields, node ${i} has ${arity} children`,
        );
      }
      checkNamedTupleType(type, `${path}.node_types[${ref}]`);
      return { kind: "namedtuple", typeName: type.name, fields: type.fields, children };
    }
  }
}

/** A dict's keys: enough of them, each a string, strictly increasing by code point. */
function dictKeys(message: TreeDef, arity: number, at: Cursor): string[] {
  const { path } = at;
  const first = at.used.dictKeys;
  if (first + arity > message.dictKeys.length) {
    throw new DecodeError(`${path}.dict_keys`, "invalid-tree", `runs out at node ${at.i}`);
  }
  at.used.dictKeys += arity;
  const keys: string[] = [];
  for (let j = first; j < first + arity; j++) {
    const ref = message.dictKeys[j];
    const key = message.strings[ref];
    if (key === undefined) {
      throw new DecodeError(
        `${path}.dict_keys[${j}]`,
        "invalid-tree",
        `string ${ref} is past the ${message.strings.length} strings`,
      );
    }
    if (keys.length > 0 && compareCodePoints(keys[keys.length - 1], key) >= 0) {
      throw new DecodeError(
        `${path}.dict_keys[${j}]`,
        "invalid-tree",
        `dict keys at node ${at.i} are not sorted and distinct`,
      );
    }
    keys.push(key);
  }
  return keys;
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

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
