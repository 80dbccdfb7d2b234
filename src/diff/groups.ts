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
  runs: Run[];
  /** Its first pair of leaves: their part, and their positions in A's and B's leaves. */
  first: FirstLeaves | null;
}

/** A group's first pair of leaves, which the inspector page draws the group's change on. */
export interface FirstLeaves {
  part: string;
  ia: number;
  ib: number;
}

/** A group as the walk found it: its places and leaves in A's tree, and its first leaves. */
export type LocatedGroup = Pick<Group, "places" | "runs" | "first">;

/**
 * A run of a group's leaves: its indices as the walk handed them on (a column, `shared`), or a
 * list of its own, which later leaves of the same container join.
 */
interface Run extends LeafRun<Place, ContainerNode> {
  indices: number[] | Int32Array;
  shared: boolean;
}

/** The groups of one comparison, in the order their causes were first found. */
export class Groups {
  readonly #groups = new Map<string, Group>();
  // Each cause object's group, found by identity: a key is looked up once per cause, not per
  // leaf (10,000 leaves on 16 changed specs are 16 look-ups by key).
  readonly #ofCause = new Map<Cause, Group>();

  /** Adds a node where `cause` was found (none for the payload's own), covering `leaves` leaves. */
  add(cause: Cause, place: Place | null, leaves: number): void {
    const group = this.#groupOf(cause);
    if (place) group.places.push(place);
    group.leaves += leaves;
  }

  /**
   * Adds a leaf where `cause` was found: child `index` of `container` (null: `parent` itself),
   * leaf `ia` of A facing leaf `ib` of B.
   */
  addLeaf(
    cause: Cause,
    parent: Place,
    container: ContainerNode | null,
    index: number,
    ia: number,
    ib: number,
  ): void {
    const group = this.#groupOf(cause);
    group.first ??= { part: parent.part, ia, ib };
    const last = group.runs[group.runs.length - 1];
    if (last && last.parent === parent && last.container === container) {
      ownIndices(last).push(index);
    } else group.runs.push({ parent, container, indices: [index], shared: false });
    group.leaves++;
  }

  /**
   * Adds leaves where `cause` was found: children `indices` of `container`, in order, the
   * first of them leaf `ia` of A facing `ib` of B. The column is kept as it is, and copied only
   * if later leaves join it.
   */
  addLeaves(
    cause: Cause,
    parent: Place,
    container: ContainerNode,
    indices: Int32Array,
    ia: number,
    ib: number,
  ): void {
    const group = this.#groupOf(cause);
    group.first ??= { part: parent.part, ia, ib };
    group.leaves += indices.length;
    const last = group.runs[group.runs.length - 1];
    if (!last || last.parent !== parent || last.container !== container) {
      group.runs.push({ parent, container, indices, shared: true });
      return;
    }
    // Leaves of another run of the same container (past a subtree between them): in order.
    const own = ownIndices(last);
    for (let i = 0; i < indices.length; i++) own.push(indices[i]);
  }

  /** The groups' places and first leaves, in the order of `finish`. */
  located(): LocatedGroup[] {
    return [...this.#groups.values()];
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
    let group = this.#ofCause.get(cause);
    if (group) return group;
    group = this.#groups.get(cause.key);
    if (!group) {
      group = { cause, leaves: 0, places: [], runs: [], first: null };
      this.#groups.set(cause.key, group);
    }
    this.#ofCause.set(cause, group);
    return group;
  }
}

/** A run's indices as a list of its own, to append to: a column handed on is copied first. */
function ownIndices(run: Run): number[] {
  if (run.shared) {
    run.indices = Array.from(run.indices);
    run.shared = false;
  }
  return run.indices as number[];
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
