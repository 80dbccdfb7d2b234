/**
 * Where a diff's groups lie in A's tree, for the inspector page to mark them: a trie of child
 * indices from each part's root. It follows places, not node objects, since a REPEAT (1.1)
 * makes one node object stand at many places, of which only some may differ.
 */
import type { LocatedGroup, Place } from "../diff/groups";

/** A node of A's tree on the way to a difference. */
export interface DiffMark {
  /** The groups found at this node itself, by their index in the diff's groups. */
  groups: number[];
  /** The marks below it, by child index in A's tree; null for none. */
  children: Map<number, DiffMark> | null;
}

/** Each part's marks, by the part's name ("specs", "input", "output", "value"). */
export function diffMarks(located: readonly LocatedGroup[]): Map<string, DiffMark> {
  const roots = new Map<string, DiffMark>();
  const known = new Map<Place, DiffMark>();
  const markOf = (place: Place): DiffMark => {
    // Up to the first place marked before (or the root), then down again, without recursion.
    const chain: Place[] = [];
    let mark: DiffMark | undefined;
    for (let at: Place | null = place; at !== null && !mark; at = at.parent) {
      mark = known.get(at);
      if (!mark) chain.push(at);
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const at = chain[i];
      if (at.parent === null) {
        mark = roots.get(at.part) ?? { groups: [], children: null };
        roots.set(at.part, mark);
      } else mark = childOf(mark as DiffMark, at.index);
      known.set(at, mark);
    }
    return mark as DiffMark;
  };
  located.forEach(({ places, runs }, group) => {
    for (const place of places) add(markOf(place), group);
    for (const { parent, container, indices } of runs) {
      const at = markOf(parent);
      if (container === null) add(at, group);
      else for (const index of indices) add(childOf(at, index), group);
    }
  });
  return roots;
}

/** How many leaves and nodes below `mark` (itself included) are marked. */
export function markedCount(mark: DiffMark): number {
  let count = 0;
  const stack = [mark];
  while (stack.length > 0) {
    const at = stack.pop() as DiffMark;
    if (at.groups.length > 0) count++;
    for (const child of at.children?.values() ?? []) stack.push(child);
  }
  return count;
}

function childOf(mark: DiffMark, index: number): DiffMark {
  mark.children ??= new Map();
  let child = mark.children.get(index);
  if (!child) {
    child = { groups: [], children: null };
    mark.children.set(index, child);
  }
  return child;
}

function add(mark: DiffMark, group: number): void {
  if (mark.groups[mark.groups.length - 1] !== group) mark.groups.push(group);
}
