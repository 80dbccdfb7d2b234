/**
 * Differences gathered by cause: each cause is found once per pair of objects (or nodes), and
 * every place it is found joins its group, so 1,000 leaves on one changed sharding are one
 * line. Python: diff/groups.py.
 */
import type { ContainerNode } from "../model/tree";
import { dictKeyText } from "../model/tree-dict-keys";
import {
  collapseLeafPaths,
  collapsePaths,
  type LeafRun,
  type PathComponent,
} from "./collapse-paths";
import type { DiffCause, DiffDetail, DiffGroup, Json } from "./payload-diff";

/** A difference before it is placed; `key` names its group (equal keys, one group). */
export interface Cause {
  key: string;
  cause: DiffCause;
  text: string;
  entries: { a: number | null; b: number | null } | null;
  a: Json;
  b: Json;
  details: DiffDetail[];
}

/** A cause of two values and no details: "shape (8, 4) to (8, 8)". */
export function valueCause(cause: DiffCause, a: Json, b: Json, text: string): Cause {
  return {
    key: `${cause}|${JSON.stringify(a)}|${JSON.stringify(b)}`,
    cause,
    text,
    entries: null,
    a,
    b,
    details: [],
  };
}

/**
 * Where a node sits, built only for the places that differ: the child `index` of a container
 * whose own place is `parent`, or (no container) the root of a part; and how many leaves lie
 * below it in A's tree, which tells a path that covers all of them.
 */
export interface Place {
  readonly parent: Place | null;
  readonly part: string;
  readonly container: ContainerNode | null;
  readonly index: number;
  readonly leaves: number;
}

/** The root of a part's tree, with `leaves` leaves. */
export function partRoot(part: string, leaves: number): Place {
  return { parent: null, part, container: null, index: -1, leaves };
}

/** The child `index` of `container`, which sits at `parent`, with `leaves` leaves below it. */
export function childPlace(
  parent: Place,
  container: ContainerNode,
  index: number,
  leaves: number,
): Place {
  return { parent, part: parent.part, container, index, leaves };
}

interface Group {
  cause: Cause;
  leaves: number;
  /** The places of a cause found at nodes. */
  places: Place[];
  /** The leaves of a cause found at leaves, by container. */
  runs: LeafRun<Place, ContainerNode>[];
}

/** The groups of one comparison, in the order their causes were first found. */
export class Groups {
  readonly #groups = new Map<string, Group>();
  // Most leaves that differ repeat the cause of the leaf before them.
  #last: { cause: Cause; group: Group } | undefined;

  /** Adds a node where `cause` was found (none for the payload's own), covering `leaves` leaves. */
  add(cause: Cause, place: Place | null, leaves: number): void {
    const group = this.#groupOf(cause);
    if (place) group.places.push(place);
    group.leaves += leaves;
  }

  /** Adds a leaf where `cause` was found: child `index` of `container` (null: `parent` itself). */
  addLeaf(cause: Cause, parent: Place, container: ContainerNode | null, index: number): void {
    const group = this.#groupOf(cause);
    const last = group.runs[group.runs.length - 1];
    if (last && last.parent === parent && last.container === container) last.indices.push(index);
    else group.runs.push({ parent, container, indices: [index] });
    group.leaves++;
  }

  /** The groups, each with its places collapsed into paths. */
  finish(): DiffGroup[] {
    return [...this.#groups.values()].map((group) => {
      const { cause, places, runs } = group;
      const paths = places.length
        ? collapsePaths(places, stepTo)
        : collapseLeafPaths(runs, componentOf, stepTo);
      return {
        cause: cause.cause,
        text: cause.text,
        count: places.length + runs.reduce((sum, run) => sum + run.indices.length, 0),
        leaves: group.leaves,
        paths,
        entries: cause.entries,
        a: cause.a,
        b: cause.b,
        details: cause.details,
      };
    });
  }

  #groupOf(cause: Cause): Group {
    if (this.#last?.cause === cause) return this.#last.group;
    let group = this.#groups.get(cause.key);
    if (!group) {
      group = { cause, leaves: 0, places: [], runs: [] };
      this.#groups.set(cause.key, group);
    }
    this.#last = { cause, group };
    return group;
  }
}

/** The step to a place, as JAX's keystr writes it: ["key"] or [0] (an item), .name (a field). */
function stepTo(place: Place): PathComponent {
  const { container, index } = place;
  return container ? componentOf(container, index) : { kind: "part", text: place.part };
}

/** The step to child `index` of `container`. */
function componentOf(container: ContainerNode, index: number): PathComponent {
  if ("keys" in container) return { kind: "item", text: dictKeyText(container.keys[index]) };
  if (container.kind === "namedtuple") return { kind: "field", text: container.fields[index] };
  return { kind: "item", text: String(index) };
}
