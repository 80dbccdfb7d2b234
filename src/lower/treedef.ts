import { NodeKind, type TreeDef } from "../../gen/ts/colocated/v1/tree";
import { EncodeError } from "../errors";
import type { PyTreeDef, TreeNode } from "../model/tree";
import { compareCodePoints } from "../model/value-key";

const KINDS: Record<TreeNode["kind"], NodeKind> = {
  leaf: NodeKind.NODE_KIND_LEAF,
  none: NodeKind.NODE_KIND_NONE,
  tuple: NodeKind.NODE_KIND_TUPLE,
  list: NodeKind.NODE_KIND_LIST,
  dict: NodeKind.NODE_KIND_DICT,
  namedtuple: NodeKind.NODE_KIND_NAMEDTUPLE,
  custom: NodeKind.NODE_KIND_CUSTOM,
};

/** Flattens a PyTreeDef into packed preorder columns, about a byte per node. */
export function lowerTreeDef(treedef: PyTreeDef): TreeDef {
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
    out.kinds.push(KINDS[node.kind]);
    if (!("children" in node)) continue;
    out.arities.push(node.children.length);
    if (node.kind === "dict") {
      checkDictKeys(node.keys, node.children.length);
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

function intern(index: Map<string, number>, key: string, append: () => number): number {
  let found = index.get(key);
  if (found === undefined) {
    found = append() - 1;
    index.set(key, found);
  }
  return found;
}

function checkDictKeys(keys: readonly string[], arity: number): void {
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
