import { NodeKind, type TreeDef } from "../../gen/ts/colocated/v1/tree";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import type { TreeNode } from "../model/tree";
import { compareCodePoints } from "../model/value-key";

interface OpenNode {
  node: TreeNode & { children: TreeNode[] };
  arity: number;
}

/**
 * Checks a TreeDef's columns against its kinds and rebuilds its nodes, without recursion.
 * Every count is checked against the nodes actually present, so a claimed arity cannot
 * make the decoder allocate more than the payload holds.
 */
export function checkTreeDef(message: TreeDef, path: string, limits: DecodeLimits): TreeNode {
  const { kinds } = message;
  if (kinds.length === 0)
    throw new DecodeError(`${path}.kinds`, "invalid-tree", "a tree has at least one node");
  if (kinds.length > limits.maxTreeNodes) {
    throw new DecodeError(
      `${path}.kinds`,
      "limit-exceeded",
      `${kinds.length} nodes pass the limit of ${limits.maxTreeNodes}`,
    );
  }
  const columns = { arities: 0, dictKeys: 0, typeRefs: 0, nodeData: 0 };
  const take = (column: keyof typeof columns, i: number): number => {
    const values = column === "nodeData" ? message.nodeData : message[column];
    if (columns[column] >= values.length) {
      throw new DecodeError(`${path}.${snake(column)}`, "invalid-tree", `runs out at node ${i}`);
    }
    return columns[column]++;
  };
  const stack: OpenNode[] = [];
  let root: TreeNode | undefined;
  for (let i = 0; i < kinds.length; i++) {
    if (root !== undefined) {
      throw new DecodeError(
        `${path}.kinds[${i}]`,
        "invalid-tree",
        "nodes follow the end of the tree",
      );
    }
    const at = `${path}.kinds[${i}]`;
    let node: TreeNode;
    let arity = 0;
    switch (kinds[i]) {
      case NodeKind.NODE_KIND_LEAF:
        node = { kind: "leaf" };
        break;
      case NodeKind.NODE_KIND_NONE:
        node = { kind: "none" };
        break;
      case NodeKind.NODE_KIND_TUPLE:
      case NodeKind.NODE_KIND_LIST:
      case NodeKind.NODE_KIND_DICT:
      case NodeKind.NODE_KIND_NAMEDTUPLE:
      case NodeKind.NODE_KIND_CUSTOM: {
        arity = message.arities[take("arities", i)];
        if (arity > kinds.length - i - 1) {
          throw new DecodeError(
            `${path}.arities`,
            "invalid-tree",
            `node ${i} claims ${arity} children, only ${kinds.length - i - 1} nodes follow`,
          );
        }
        node = openContainer(message, kinds[i], arity, i, path, take);
        break;
      }
      default:
        throw new DecodeError(at, "unknown-enum", `unknown node kind ${kinds[i]}`);
    }
    if (stack.length >= limits.maxTreeDepth) {
      throw new DecodeError(
        at,
        "limit-exceeded",
        `nesting passes the depth limit of ${limits.maxTreeDepth}`,
      );
    }
    if (arity > 0) {
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
  for (const [column, used] of Object.entries(columns)) {
    const values = message[column as keyof typeof columns];
    if (used !== values.length) {
      throw new DecodeError(
        `${path}.${snake(column)}`,
        "invalid-tree",
        `${values.length - used} unused values`,
      );
    }
  }
  return root;
}

function openContainer(
  message: TreeDef,
  kind: NodeKind,
  arity: number,
  i: number,
  path: string,
  take: (column: "dictKeys" | "typeRefs" | "nodeData", i: number) => number,
): TreeNode {
  const children: TreeNode[] = [];
  switch (kind) {
    case NodeKind.NODE_KIND_TUPLE:
      return { kind: "tuple", children };
    case NodeKind.NODE_KIND_LIST:
      return { kind: "list", children };
    case NodeKind.NODE_KIND_DICT: {
      const keys: string[] = [];
      for (let k = 0; k < arity; k++) {
        const ref = message.dictKeys[take("dictKeys", i)];
        const key = message.strings[ref];
        if (key === undefined) {
          throw new DecodeError(
            `${path}.dict_keys`,
            "invalid-tree",
            `string ${ref} is past the ${message.strings.length} strings`,
          );
        }
        if (k > 0 && compareCodePoints(keys[k - 1], key) >= 0) {
          throw new DecodeError(
            `${path}.dict_keys`,
            "invalid-tree",
            `dict keys at node ${i} are not sorted and distinct`,
          );
        }
        keys.push(key);
      }
      return { kind: "dict", keys, children };
    }
    default: {
      const ref = message.typeRefs[take("typeRefs", i)];
      const type = message.nodeTypes[ref];
      if (type === undefined) {
        throw new DecodeError(
          `${path}.type_refs`,
          "invalid-tree",
          `node type ${ref} is past the ${message.nodeTypes.length} types`,
        );
      }
      if (kind === NodeKind.NODE_KIND_CUSTOM) {
        const nodeData = message.nodeData[take("nodeData", i)];
        return { kind: "custom", typeName: type.name, nodeData, children };
      }
      if (type.fields.length !== arity) {
        throw new DecodeError(
          `${path}.arities`,
          "invalid-tree",
          `namedtuple ${type.name} has ${type.fields.length} fields, node ${i} has ${arity} children`,
        );
      }
      return { kind: "namedtuple", typeName: type.name, fields: type.fields, children };
    }
  }
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
