/**
 * A group's places as few paths: siblings whose differing leaves lie alike below them become
 * one `[*]` (or `.*`), so the leaves of 1,000 layers read `["layers"][*]["w"]`. Python:
 * diff/collapse_paths.py, the same steps.
 */
import type { DiffPath } from "./payload-diff";

/** One step of a path: the part it starts in, an item ([0], ["w"]) or a field (.w). */
export interface PathComponent {
  kind: "part" | "item" | "field";
  /** The index or key as written between brackets, or the field's name; "*" once collapsed. */
  text: string;
}

/** A place in a tree: its parent's place (null at a part's root), and its leaves. */
export interface PathPlace<P> {
  readonly parent: P | null;
  /** How many leaves lie below it in the tree. */
  readonly leaves: number;
}

/** Siblings are collapsed when at least this many lie alike: two are clearer named. */
export const COLLAPSE_AT = 3;

interface Trie {
  kind: PathComponent["kind"];
  text: string;
  /** How many paths end here. */
  end: number;
  children: Map<string, Trie> | null;
  /** The shape of what lies below (ends and steps, not counts), interned: equal ids, alike. */
  shape: number;
  /** For a leaf's path, how many leaves lie below the node in the tree, if known. */
  leaves: number;
}

// The shapes of a node without children: no path ends there (the root only), or some do.
const BARE = 0;
const END = 1;

/**
 * Places collapsed into paths, in the order they were first given. Places share their parents'
 * places, so each step is named once (`step`), however many places lie below it.
 */
export function collapsePaths<P extends PathPlace<P>>(
  places: readonly P[],
  step: (place: P) => PathComponent,
): DiffPath[] {
  const paths = new PathTrie(step);
  // A place with no place below it lies alike with its siblings of the same kind (nothing
  // below): COLLAPSE_AT or more of them are counted into their `*` at once, where the first
  // would have stood, rather than each given a node first.
  const above = new Set<P>();
  for (const place of places) {
    for (let at = place.parent; at !== null && !above.has(at); at = at.parent) above.add(at);
  }
  const bare = new Map<P, number>();
  for (const place of places) {
    if (place.parent !== null && !above.has(place)) {
      bare.set(place.parent, (bare.get(place.parent) ?? 0) + 1);
    }
  }
  for (const place of places) {
    const parent = place.parent;
    if (parent === null || above.has(place) || (bare.get(parent) as number) < COLLAPSE_AT) {
      paths.nodeOf(place).end++;
    } else paths.starOf(parent, () => step(place).kind).end++;
  }
  return paths.finish();
}

/** Leaves of one container: its children `indices`, the container at `parent` (null: the leaf is `parent` itself, a part's root). */
export interface LeafRun<P, C> {
  readonly parent: P;
  readonly container: C | null;
  readonly indices: ArrayLike<number> & Iterable<number>;
}

/**
 * Leaves collapsed into paths, in the order they were given, child `index` of a run's
 * container one step on (`leafStep`). Nothing lies below a leaf, so only the leaves of one
 * parent are counted before the paths are built: 10,000 leaves cost a few nodes, not 10,000.
 */
export function collapseLeafPaths<P extends PathPlace<P>, C>(
  runs: readonly LeafRun<P, C>[],
  leafStep: (container: C, index: number) => PathComponent,
  step: (place: P) => PathComponent,
): DiffPath[] {
  const paths = new PathTrie(step, true);
  const counts = new Map<P, number>();
  for (const { parent, indices } of runs) {
    counts.set(parent, (counts.get(parent) ?? 0) + indices.length);
  }
  for (const { parent, container, indices } of runs) {
    if (container === null) paths.nodeOf(parent).end += indices.length;
    else if ((counts.get(parent) as number) >= COLLAPSE_AT) {
      paths.starOf(parent, () => leafStep(container, indices[0]).kind).end += indices.length;
    } else {
      for (const index of indices) {
        const leaf = childOf(paths.nodeOf(parent), leafStep(container, index));
        leaf.end++;
        leaf.leaves = 1;
      }
    }
  }
  return paths.finish();
}

/** The trie of a group's paths: a node per step, built from places. */
class PathTrie<P extends PathPlace<P>> {
  readonly root = trie("part", "");
  readonly #nodes = new Map<P, Trie>();
  readonly #stars = new Map<P, Trie>();

  constructor(
    readonly step: (place: P) => PathComponent,
    /** The paths are leaves': a node whose every leaf is among them stands for them all. */
    readonly ofLeaves = false,
  ) {}

  /** The node of a place: the places up to the first one met before, then down again. */
  nodeOf(place: P): Trie {
    const chain: P[] = [];
    let known: Trie | undefined;
    for (let at: P | null = place; at !== null; at = at.parent) {
      known = this.#nodes.get(at);
      if (known) break;
      chain.push(at);
    }
    let node = known ?? this.root;
    for (let i = chain.length - 1; i >= 0; i--) {
      node = childOf(node, this.step(chain[i]));
      node.leaves = chain[i].leaves;
      this.#nodes.set(chain[i], node);
    }
    return node;
  }

  /** The `*` of the bare children of the place `parent`, made where the first of them stands. */
  starOf(parent: P, kind: () => PathComponent["kind"]): Trie {
    let star = this.#stars.get(parent);
    if (!star) {
      star = childOf(this.nodeOf(parent), { kind: kind(), text: "*" });
      this.#stars.set(parent, star);
    }
    return star;
  }

  /** The paths, once siblings alike are collapsed, children before their parents. */
  finish(): DiffPath[] {
    const shapes = new Map<string, number>();
    const order = preorder(this.root);
    if (this.ofLeaves) completeSubtrees(order);
    for (let i = order.length - 1; i >= 0; i--) {
      const node = order[i];
      if (!node.children) {
        node.shape = node.end > 0 ? END : BARE;
        continue;
      }
      collapseChildren(node);
      const steps = [...node.children.values()].flatMap((c) => [c.kind, c.text, c.shape]);
      const key = JSON.stringify([node.end > 0, ...steps]);
      let shape = shapes.get(key);
      if (shape === undefined) {
        shape = shapes.size + 2;
        shapes.set(key, shape);
      }
      node.shape = shape;
    }
    return emit(this.root);
  }
}

function trie(kind: PathComponent["kind"], text: string): Trie {
  return { kind, text, end: 0, children: null, shape: BARE, leaves: -1 };
}

/** The child of `node` one step on; children are keyed by their text, unique in a container. */
function childOf(node: Trie, component: PathComponent): Trie {
  const key = component.text;
  node.children ??= new Map();
  let child = node.children.get(key);
  if (!child) {
    child = trie(component.kind, component.text);
    node.children.set(key, child);
  }
  return child;
}

/** Every node, parents before children, without recursion (paths may be 1,000 deep). */
function preorder(root: Trie): Trie[] {
  const out: Trie[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop() as Trie;
    out.push(node);
    if (!node.children) continue;
    const children = [...node.children.values()];
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return out;
}

/**
 * A node every leaf below which is among the paths (two or more: one is named as it is) becomes
 * one path that ends there, with all their count: "1,303 leaves under (root)" rather than
 * nineteen paths that list them.
 */
function completeSubtrees(order: readonly Trie[]): void {
  const totals = new Map<Trie, number>();
  for (let i = order.length - 1; i >= 0; i--) {
    const node = order[i];
    let total = node.end;
    for (const child of node.children?.values() ?? []) total += totals.get(child) as number;
    totals.set(node, total);
    if (node.children && total === node.leaves && total > 1) {
      node.children = null;
      node.end = total;
    }
  }
}

/** Replaces each set of COLLAPSE_AT or more alike siblings by one `*`, where the first stood. */
function collapseChildren(node: Trie): void {
  const siblings = node.children as Map<string, Trie>;
  if (siblings.size < COLLAPSE_AT) return;
  const alike = new Map<number, Trie[]>();
  for (const child of siblings.values()) {
    if (child.kind === "part") continue;
    const key = alikeKey(child);
    const set = alike.get(key);
    if (set) set.push(child);
    else alike.set(key, [child]);
  }
  if (![...alike.values()].some((set) => set.length >= COLLAPSE_AT)) return;
  const children = new Map<string, Trie>();
  for (const [key, child] of siblings) {
    const set = alike.get(alikeKey(child));
    if (!set || set.length < COLLAPSE_AT) children.set(key, child);
    else if (set[0] === child) {
      const star = { ...child, text: "*" };
      for (let i = 1; i < set.length; i++) absorb(star, set[i]);
      // No text is a bare "*" (keys are quoted, indices are numbers, fields are names).
      children.set(`*${alikeKey(child)}`, star);
    }
  }
  node.children = children;
}

/** Siblings lie alike when they are steps of one kind with the same shape below. */
function alikeKey(node: Trie): number {
  return node.shape * 2 + (node.kind === "field" ? 1 : 0);
}

/** Adds the ends of `from` to `into`, which lies alike (same shape: same steps below). */
function absorb(into: Trie, from: Trie): void {
  if (!from.children) {
    into.end += from.end;
    return;
  }
  const stack: [Trie, Trie][] = [[into, from]];
  while (stack.length > 0) {
    const [a, b] = stack.pop() as [Trie, Trie];
    a.end += b.end;
    if (!b.children) continue;
    const below = a.children as Map<string, Trie>;
    for (const [key, child] of b.children) stack.push([below.get(key) as Trie, child]);
  }
}

/** The collapsed paths, in preorder, each with its count. */
function emit(root: Trie): DiffPath[] {
  const out: DiffPath[] = [];
  const stack: { node: Trie; part: string; path: string }[] = [];
  const parts = [...(root.children?.values() ?? [])];
  for (let i = parts.length - 1; i >= 0; i--) {
    stack.push({ node: parts[i], part: parts[i].text, path: "" });
  }
  while (stack.length > 0) {
    const { node, part, path } = stack.pop() as (typeof stack)[number];
    if (node.end > 0) out.push({ part, path, count: node.end });
    const children = [...(node.children?.values() ?? [])];
    for (let i = children.length - 1; i >= 0; i--) {
      const child = children[i];
      const text = child.kind === "field" ? `.${child.text}` : `[${child.text}]`;
      stack.push({ node: child, part, path: path + text });
    }
  }
  return out;
}
