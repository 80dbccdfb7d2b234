/**
 * Two trees walked side by side, once: what differs in their structure is reported at its
 * node, and each pair of leaves that face each other is handed on, to be compared by their
 * entries. Without recursion (trees may be 1,000 deep). Python: diff/tree_walk.py.
 */
import { type ContainerNode, LEAF, type TreeNode } from "../model/tree";
import { type DictKey, dictKeyIdentity, dictKeyText, factoryText } from "../model/tree-dict-keys";
import { sameNumbers } from "./compare-entries";
import { change, listText, thousands } from "./describe";
import { type Cause, childPlace, type Place, partRoot, valueCause } from "./groups";
import type { Json } from "./payload-diff";

/** What a walk finds. */
export interface WalkSink {
  /** A difference at the node at `place`, covering `leaves` leaves that face nothing. */
  node(cause: Cause, place: Place, leaves: number): void;
  /** Leaf `ia` of A faces leaf `ib` of B, as child `index` of `container` (null: the root). */
  leaf(ia: number, ib: number, parent: Place, container: ContainerNode | null, index: number): void;
  /**
   * Leaves `ia + k` of A face `ib + k` of B, as children `from + k` of `container`, k < `count`:
   * a run of sibling leaves, handed on at once (a list of 10,000 arrays is one call).
   */
  leaves(
    ia: number,
    ib: number,
    from: number,
    count: number,
    parent: Place,
    container: ContainerNode,
  ): void;
}

/** Children facing each other: in order (tuples, lists, custom nodes) or by key (dicts, namedtuples). */
type Matching = "order" | "key";

/** A pair of containers whose children are being walked. */
interface Frame {
  a: ContainerNode;
  b: ContainerNode;
  place: Place;
  /** The children's pairs (A's index, B's index), or null for 0, 1, 2, ... on both sides. */
  pairs: number[] | null;
  /** With pairs, where each pair's leaves start on each side. */
  starts: number[] | null;
  next: number;
  count: number;
  /** Without pairs, where the next child's leaves start. */
  pa: number;
  pb: number;
}

/** Walks part `part` of both payloads: A's tree `a`, of `leaves` leaves, against B's tree `b`. */
export function walkTrees(
  part: string,
  a: TreeNode,
  b: TreeNode,
  leaves: number,
  sink: WalkSink,
): void {
  const counts = new LeafCounts();
  const root = partRoot(part, leaves);
  if (a.kind === "leaf" && b.kind === "leaf") {
    sink.leaf(0, 0, root, null, -1);
    return;
  }
  const first = compareNodes(a, b, root, 0, 0, sink, counts);
  const stack: Frame[] = first ? [first] : [];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const { a: fa, b: fb, pairs, starts, count, place } = frame;
    // The frame's cursor in locals while its children are walked (most children are leaves).
    let { next, pa, pb } = frame;
    let inner: Frame | undefined;
    while (next < count && !inner) {
      const k = next++;
      const i = pairs ? pairs[2 * k] : k;
      const j = pairs ? pairs[2 * k + 1] : k;
      const ca = fa.children[i];
      const cb = fb.children[j];
      const sa = starts ? starts[2 * k] : pa;
      const sb = starts ? starts[2 * k + 1] : pb;
      if (ca.kind === "leaf" && cb.kind === "leaf") {
        if (pairs) {
          sink.leaf(sa, sb, place, fa, i);
          continue;
        }
        // Children in order: the leaves that follow face each other too, as one run.
        let end = next;
        while (end < count && isLeaf(fa.children[end]) && isLeaf(fb.children[end])) end++;
        sink.leaves(pa, pb, k, end - k, place, fa);
        pa += end - k;
        pb += end - k;
        next = end;
        continue;
      }
      if (!starts) {
        pa += counts.of(ca);
        pb += counts.of(cb);
      }
      if (ca.kind !== "none" || cb.kind !== "none") {
        const at = childPlace(place, fa, i, counts.of(ca));
        inner = compareNodes(ca, cb, at, sa, sb, sink, counts);
      }
    }
    frame.next = next;
    frame.pa = pa;
    frame.pb = pb;
    if (inner) stack.push(inner);
    else stack.pop();
  }
}

/**
 * Compares two nodes that are not both leaves: reports what differs in them, and returns the
 * frame of their children when those face each other.
 */
function compareNodes(
  a: TreeNode,
  b: TreeNode,
  place: Place,
  pa: number,
  pb: number,
  sink: WalkSink,
  counts: LeafCounts,
): Frame | undefined {
  const ma = matchingOf(a);
  const mb = matchingOf(b);
  const da = describeNode(a);
  const db = describeNode(b);
  if (!ma || ma !== mb) {
    if (da !== db) sink.node(nodeCause("node", da, db), place, counts.of(a) + counts.of(b));
    return undefined;
  }
  const x = a as ContainerNode;
  const y = b as ContainerNode;
  if (da !== db) sink.node(nodeCause("node", da, db), place, 0);
  for (const cause of nodeFieldCauses(x, y)) sink.node(cause, place, 0);
  const frame: Frame = { a: x, b: y, place, pairs: null, starts: null, next: 0, count: 0, pa, pb };
  if (ma === "order" || sameKeys(keysOf(x), keysOf(y))) {
    const na = x.children.length;
    const nb = y.children.length;
    frame.count = Math.min(na, nb);
    if (na !== nb) {
      const extra = counts.sum(x.children, frame.count) + counts.sum(y.children, frame.count);
      sink.node(nodeCause("length", na, nb), place, extra);
    }
    // Children that are all leaves (a list of arrays) face each other as one run.
    if (!allLeaves(x) || !allLeaves(y)) return frame;
    sink.leaves(pa, pb, 0, frame.count, place, x);
    return undefined;
  }
  return keyedFrame(frame, sink, counts);
}

/** The frame of two keyed containers whose keys differ: keys on one side only are reported. */
function keyedFrame(frame: Frame, sink: WalkSink, counts: LeafCounts): Frame {
  const { a, b, place, pa, pb } = frame;
  const keysA = keysOf(a);
  const keysB = keysOf(b);
  const inB = new Map<string, number>();
  keysB.forEach((key, j) => {
    inB.set(identity(key), j);
  });
  const pairs: number[] = [];
  const removed: number[] = [];
  const matched = new Set<number>();
  keysA.forEach((key, i) => {
    const j = inB.get(identity(key));
    if (j === undefined) removed.push(i);
    else {
      pairs.push(i, j);
      matched.add(j);
    }
  });
  const added = keysB.flatMap((_, j) => (matched.has(j) ? [] : [j]));
  const field = a.kind === "namedtuple" && b.kind === "namedtuple";
  const leaves =
    removed.reduce((sum, i) => sum + counts.of(a.children[i]), 0) +
    added.reduce((sum, j) => sum + counts.of(b.children[j]), 0);
  const removedTexts = removed.map((i) => keyText(keysA[i], field));
  const addedTexts = added.map((j) => keyText(keysB[j], field));
  if (removed.length || added.length) {
    sink.node(keysCause(removedTexts, addedTexts, field), place, leaves);
  }
  if (a.kind === "ordered_dict" && b.kind === "ordered_dict") {
    const order = pairs.filter((_, k) => k % 2 === 1);
    if (order.some((j, k) => k > 0 && j < order[k - 1])) {
      const inA = pairs.filter((_, k) => k % 2 === 0).map((i) => keyText(keysA[i], false));
      const sorted = [...order].sort((x, y) => x - y).map((j) => keyText(keysB[j], false));
      const cause = valueCause("key_order", inA, sorted, "");
      cause.text = `key order ${listText(inA)} to ${listText(sorted)}`;
      sink.node(cause, place, 0);
    }
  }
  const startsA = counts.starts(a.children, pa);
  const startsB = counts.starts(b.children, pb);
  frame.pairs = pairs;
  frame.starts = pairs.map((index, k) => (k % 2 === 0 ? startsA[index] : startsB[index]));
  frame.count = pairs.length / 2;
  return frame;
}

/** What differs in two containers' own fields: a custom node's data and class, a factory. */
function nodeFieldCauses(a: ContainerNode, b: ContainerNode): Cause[] {
  const causes: Cause[] = [];
  if (a.kind === "custom" && b.kind === "custom" && a.typeName === b.typeName) {
    if (!sameNumbers(a.nodeData, b.nodeData)) {
      causes.push(nodeCause("node_data", dataText(a.nodeData), dataText(b.nodeData)));
    }
    const pickleA = a.typePickle?.bytes ?? new Uint8Array();
    const pickleB = b.typePickle?.bytes ?? new Uint8Array();
    if (!sameNumbers(pickleA, pickleB)) {
      const cause = valueCause("class_pickle", pickleA.length, pickleB.length, "");
      cause.text = `the pickled class differs (${bytesText(pickleA.length)} to ${bytesText(pickleB.length)})`;
      causes.push(cause);
    }
  }
  if (a.kind === "default_dict" && b.kind === "default_dict") {
    const fa = factoryText(a.defaultFactory);
    const fb = factoryText(b.defaultFactory);
    if (fa !== fb) {
      const cause = valueCause("default_factory", factoryJson(fa), factoryJson(fb), "");
      cause.text = `default_factory ${factoryWords(fa)} to ${factoryWords(fb)}`;
      causes.push(cause);
    }
  }
  return causes;
}

/** A node's type in words: leaf, None, tuple, dict, OrderedDict, namedtuple m.T, m.Custom. */
function describeNode(node: TreeNode): string {
  switch (node.kind) {
    case "none":
      return "None";
    case "ordered_dict":
      return "OrderedDict";
    case "default_dict":
      return "defaultdict";
    case "namedtuple":
      return `namedtuple ${node.typeName}`;
    case "custom":
      return node.typeName;
    default:
      return node.kind;
  }
}

/**
 * Whether every child of a container is a leaf; found once per node (trees are immutable, and
 * a decoded one is kept with its checks, so a diff of trees seen before does not look again).
 */
function allLeaves(node: ContainerNode): boolean {
  let all = ALL_LEAVES.get(node);
  if (all === undefined) {
    all = node.children.every(isLeaf);
    ALL_LEAVES.set(node, all);
  }
  return all;
}

const ALL_LEAVES = new WeakMap<ContainerNode, boolean>();

/** A leaf: decoded trees share one leaf node, so identity answers first. */
function isLeaf(node: TreeNode): boolean {
  return node === LEAF || node.kind === "leaf";
}

function matchingOf(node: TreeNode): Matching | undefined {
  if (node.kind === "leaf" || node.kind === "none") return undefined;
  return node.kind === "tuple" || node.kind === "list" || node.kind === "custom" ? "order" : "key";
}

/** A keyed container's keys: a dict's, or a namedtuple's fields. */
function keysOf(node: ContainerNode): readonly DictKey[] {
  if ("keys" in node) return node.keys;
  return node.kind === "namedtuple" ? node.fields : [];
}

function identity(key: DictKey): string {
  return typeof key === "string" ? `s${key}` : dictKeyIdentity(key);
}

function sameKeys(a: readonly DictKey[], b: readonly DictKey[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x !== y && (typeof x === "string" || identity(x) !== identity(y))) return false;
  }
  return true;
}

function keyText(key: DictKey, field: boolean): string {
  return field ? (key as string) : dictKeyText(key);
}

/** A cause of a node's two descriptions: "tuple to list", "length 3 to 4", "node data b'a' to b'b'". */
function nodeCause(cause: "node" | "length" | "node_data", a: Json, b: Json): Cause {
  const words = { node: "", length: "length ", node_data: "node data " }[cause];
  return valueCause(cause, a, b, `${words}${change(String(a), String(b))}`);
}

/** Keys on one side only: `key "bias" added`, `fields w, b removed`. */
function keysCause(removed: string[], added: string[], field: boolean): Cause {
  const noun = (n: number) => (field ? (n === 1 ? "field" : "fields") : n === 1 ? "key" : "keys");
  const words = [
    ...(removed.length ? [`${noun(removed.length)} ${listText(removed)} removed`] : []),
    ...(added.length ? [`${noun(added.length)} ${listText(added)} added`] : []),
  ];
  return valueCause("keys", removed, added, words.join(", "));
}

/** Node data as Python's repr of bytes when short, else its size. */
function dataText(data: Uint8Array): string {
  return data.length <= 64 ? dictKeyText(data) : `<${bytesText(data.length)}>`;
}

function bytesText(n: number): string {
  return `${thousands(n)} ${n === 1 ? "byte" : "bytes"}`;
}

/** A factory in the result: its name, null for None, {"pickled": bytes} for a pickle. */
function factoryJson(text: string | null): Json {
  return text?.startsWith("\0") ? { pickled: text.length - 1 } : text;
}

function factoryWords(text: string | null): string {
  if (text === null) return "None";
  return text.startsWith("\0") ? "a pickled factory" : text;
}

/** Leaves below each node, counted once per container (a REPEAT's subtree is one object). */
class LeafCounts {
  readonly #counts = new Map<TreeNode, number>();

  /** The leaves below `node`. */
  of(node: TreeNode): number {
    if (node.kind === "leaf") return 1;
    if (node.kind === "none") return 0;
    const known = this.#counts.get(node);
    if (known !== undefined) return known;
    // Children before parents, without recursion.
    const stack: [ContainerNode, boolean][] = [[node, false]];
    while (stack.length > 0) {
      const [at, done] = stack.pop() as [ContainerNode, boolean];
      if (done) {
        this.#counts.set(at, this.sum(at.children, 0));
        continue;
      }
      stack.push([at, true]);
      for (const child of at.children) {
        if ("children" in child && !this.#counts.has(child)) stack.push([child, false]);
      }
    }
    return this.#counts.get(node) as number;
  }

  /** The leaves below `children[from:]`. */
  sum(children: readonly TreeNode[], from: number): number {
    let sum = 0;
    for (let i = from; i < children.length; i++) sum += this.of(children[i]);
    return sum;
  }

  /** Where each child's leaves start, the first at `base`. */
  starts(children: readonly TreeNode[], base: number): number[] {
    const out = new Array<number>(children.length);
    for (let i = 0, at = base; i < children.length; i++) {
      out[i] = at;
      at += this.of(children[i]);
    }
    return out;
  }
}
