import { base64Encode } from "@bufbuild/protobuf/wire";
import type { DictKey, Pickled } from "./tree-dict-keys";
import { ValueObject } from "./value-key";

/**
 * One node of a PyTreeDef. A dict's keys are sorted as JAX sorts them (str by code point, int
 * and bool by value); an ordered dict keeps its insertion order.
 */
export type TreeNode =
  | { readonly kind: "leaf" }
  | { readonly kind: "none" }
  | { readonly kind: "tuple"; readonly children: readonly TreeNode[] }
  | { readonly kind: "list"; readonly children: readonly TreeNode[] }
  | {
      readonly kind: "dict";
      readonly keys: readonly DictKey[];
      readonly children: readonly TreeNode[];
    }
  | {
      /** A collections.OrderedDict (colocated.v1.1). */
      readonly kind: "ordered_dict";
      readonly keys: readonly DictKey[];
      readonly children: readonly TreeNode[];
    }
  | {
      /** A collections.defaultdict (colocated.v1.1); its keys are sorted as a dict's. */
      readonly kind: "default_dict";
      /** "module.QualName" of its default_factory, null for None, or (1.1) its pickle. */
      readonly defaultFactory: string | null | Pickled;
      readonly keys: readonly DictKey[];
      readonly children: readonly TreeNode[];
    }
  | {
      readonly kind: "namedtuple";
      /** "module.QualName" of the namedtuple class. */
      readonly typeName: string;
      readonly fields: readonly string[];
      readonly children: readonly TreeNode[];
    }
  | {
      readonly kind: "custom";
      /** "module.QualName" of the registered node type (dataclasses included). */
      readonly typeName: string;
      /** The node's auxiliary data, opaque to TypeScript. */
      readonly nodeData: Uint8Array;
      /** The class pickled (1.1), when its name does not find it again (a local class). */
      readonly typePickle?: Pickled;
      readonly children: readonly TreeNode[];
    };

/** The one leaf node and the one None node: they hold nothing, so every tree can share them. */
export const LEAF: TreeNode = Object.freeze({ kind: "leaf" });
export const NONE: TreeNode = Object.freeze({ kind: "none" });

/** The kinds of container node, which have children. */
export type ContainerNode = Extract<TreeNode, { children: readonly TreeNode[] }>;

/** jax.tree_util.PyTreeDef: the structure of a pytree, without its leaves. */
export class PyTreeDef extends ValueObject {
  #counts: { readonly leaves: number; readonly nodes: number } | undefined;

  constructor(readonly root: TreeNode) {
    super();
  }

  /** How many leaves the tree has. */
  get numLeaves(): number {
    return this.#count().leaves;
  }

  /** How many nodes the tree has, leaves included. */
  get numNodes(): number {
    return this.#count().nodes;
  }

  // Counted when first asked: decoding builds a PyTreeDef and need not walk it (a walk is
  // about a third of lifting a tree, and more where REPEATs share a subtree many times).
  #count(): { readonly leaves: number; readonly nodes: number } {
    if (this.#counts === undefined) {
      let leaves = 0;
      let nodes = 0;
      forEachNode(this.root, (node) => {
        nodes++;
        if (node.kind === "leaf") leaves++;
      });
      this.#counts = { leaves, nodes };
    }
    return this.#counts;
  }

  protected computeKey(): string {
    return `PyTreeDef(${JSON.stringify(this.root, (_, v) => {
      // Bytes (node data, a bytes key) are not the str of their base64.
      if (v instanceof Uint8Array) return { bytes: base64Encode(v) };
      // An int key is not its str: 1 and "1" are two keys.
      return typeof v === "bigint" ? { int: v.toString() } : v;
    })})`;
  }
}

/** Visits every node in preorder, without recursion, so deep trees cannot overflow the stack. */
export function forEachNode(root: TreeNode, visit: (node: TreeNode) => void): void {
  const stack: TreeNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as TreeNode;
    visit(node);
    if ("children" in node) {
      for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
    }
  }
}
