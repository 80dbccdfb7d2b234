import { EncodeError } from "../errors";
import { LEAF, NONE, PyTreeDef, type TreeNode } from "./tree";
import { type DictKey, Pickled, sortDictKeys } from "./tree-dict-keys";
import { CustomNode, DefaultDict, NamedTuple, OrderedDict, Tuple } from "./tree-values";
import { compareCodePoints } from "./value-key";

/**
 * Splits a pytree into its structure and its leaves, like jax.tree_util.tree_flatten:
 * plain objects are dicts (and so are Maps, whose keys may be ints, bools and null too),
 * arrays are lists, `null` is None, and Tuple, NamedTuple, OrderedDict, DefaultDict and
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
    if (value instanceof OrderedDict) {
      const keys = value.entries.map(([k]) => dictKey(k));
      return { kind: "ordered_dict", keys, children: children(value.entries.map(([, v]) => v)) };
    }
    if (value instanceof Map || value instanceof DefaultDict) {
      const pairs = value instanceof Map ? [...value.entries()] : value.entries;
      const entries = new Map(pairs.map(([k, v]) => [dictKey(k), v]));
      const keys = sortDictKeys([...entries.keys()]);
      if (typeof keys === "string") throw new EncodeError("tree", keys);
      const values = children(keys.map((k) => entries.get(k)));
      if (value instanceof Map) return { kind: "dict", keys, children: values };
      const { defaultFactory } = value;
      return { kind: "default_dict", defaultFactory, keys, children: values };
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

/**
 * Rebuilds a pytree from its structure and leaves, like jax.tree_util.tree_unflatten. A dict
 * whose keys are all strings is a plain object; any other dict is a Map.
 */
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
      case "dict": {
        const entries = node.keys.map((k, i) => [k, build(node.children[i])] as const);
        const strings = node.keys.every((k) => typeof k === "string");
        return strings ? Object.fromEntries(entries) : new Map(entries);
      }
      case "ordered_dict":
        return new OrderedDict(node.keys.map((k, i) => [k, build(node.children[i])]));
      case "default_dict":
        return new DefaultDict(
          node.defaultFactory,
          node.keys.map((k, i) => [k, build(node.children[i])]),
        );
      case "namedtuple":
        return new NamedTuple(node.typeName, node.fields, node.children.map(build));
      case "custom":
        return new CustomNode(node.typeName, node.nodeData, node.children.map(build));
    }
  };
  return build(treedef.root);
}

/**
 * A Map key as a dict key: a JavaScript integer is a Python int, any other number a float; an
 * array is a tuple, a Uint8Array bytes.
 */
function dictKey(key: unknown): DictKey {
  if (typeof key === "number") {
    if (Number.isSafeInteger(key)) return BigInt(key);
    if (Number.isInteger(key) || Number.isNaN(key))
      throw new EncodeError("tree", `dict key ${key} is not a safe integer or a float key`);
    return key;
  }
  if (Array.isArray(key)) return Object.freeze(key.map(dictKey));
  if (
    key === null ||
    typeof key === "string" ||
    typeof key === "bigint" ||
    typeof key === "boolean" ||
    key instanceof Uint8Array ||
    key instanceof Pickled
  )
    return key;
  throw new EncodeError(
    "tree",
    `a dict key must be a string, number, boolean, null, Uint8Array or array, not ${typeof key}`,
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
