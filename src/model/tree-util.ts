import { EncodeError } from "../errors";
import { LEAF, NONE, PyTreeDef, type TreeNode } from "./tree";
import { CustomNode, NamedTuple, Tuple } from "./tree-values";
import { compareCodePoints } from "./value-key";

/**
 * Splits a pytree into its structure and its leaves, like jax.tree_util.tree_flatten:
 * plain objects are dicts, arrays are lists, `null` is None, and Tuple, NamedTuple and
 * CustomNode mark the other node kinds. Anything else is a leaf.
 */
export function treeFlatten<T = unknown>(tree: unknown): { treedef: PyTreeDef; leaves: T[] } {
  const leaves: T[] = [];
  const visit = (value: unknown, depth: number): TreeNode => {
    if (depth > 10_000) throw new EncodeError("tree", "nested more than 10,000 levels deep");
    if (value === null) return NONE;
    const children = (items: readonly unknown[]) => items.map((v) => visit(v, depth + 1));
    if (Array.isArray(value)) return { kind: "list", children: children(value) };
    if (value instanceof Tuple) return { kind: "tuple", children: children(value.items) };
    if (value instanceof NamedTuple) {
      const { typeName, fields } = value;
      return { kind: "namedtuple", typeName, fields, children: children(value.values) };
    }
    if (value instanceof CustomNode) {
      const { typeName, nodeData } = value;
      return { kind: "custom", typeName, nodeData, children: children(value.children) };
    }
    if (isPlainObject(value)) {
      const keys = Object.keys(value).sort(compareCodePoints);
      return { kind: "dict", keys, children: children(keys.map((k) => value[k])) };
    }
    leaves.push(value as T);
    return LEAF;
  };
  return { treedef: new PyTreeDef(visit(tree, 0)), leaves };
}

/** Rebuilds a pytree from its structure and leaves, like jax.tree_util.tree_unflatten. */
export function treeUnflatten<T = unknown>(treedef: PyTreeDef, leaves: readonly T[]): unknown {
  if (leaves.length !== treedef.numLeaves) {
    throw new TypeError(`treedef has ${treedef.numLeaves} leaves, got ${leaves.length}`);
  }
  let next = 0;
  const build = (node: TreeNode): unknown => {
    switch (node.kind) {
      case "leaf":
        return leaves[next++];
      case "none":
        return null;
      case "list":
        return node.children.map(build);
      case "tuple":
        return new Tuple(node.children.map(build));
      case "dict":
        return Object.fromEntries(node.keys.map((k, i) => [k, build(node.children[i])]));
      case "namedtuple":
        return new NamedTuple(node.typeName, node.fields, node.children.map(build));
      case "custom":
        return new CustomNode(node.typeName, node.nodeData, node.children.map(build));
    }
  };
  return build(treedef.root);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
