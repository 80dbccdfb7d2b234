/**
 * Two payloads as the inspector page shows their diff, as plain data: the CLI's lines, where
 * each group lies in A's tree, and each changed sharding before and after, to be drawn on its
 * mesh as the page draws any sharding.
 */
import { DiffInputError, diffInDetail } from "../diff/diff-payloads";
import { formatDiff } from "../diff/format-diff";
import type { FirstLeaves } from "../diff/groups";
import type { PayloadDiff } from "../diff/payload-diff";
import type { DiffSide } from "../diff/read-side";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { Sharding } from "../model/sharding";
import { leafPaths } from "./describe-leaf";
import { type DiffMark, diffMarks } from "./diff-marks";
import { exampleShape, type ShardingView, shardingView } from "./shardings";
import { type Inspected, inspectView, isSharding } from "./view";

/** A named payload. */
export interface NamedBytes {
  bytes: Uint8Array;
  name: string;
}

/** A group whose cause is a sharding or its mesh, drawn on its first pair of leaves. */
export interface ShardingChange {
  /** The group's index in the diff's groups. */
  group: number;
  text: string;
  /** A's sharding and B's (null: the leaf has none), their ids their table entries. */
  before: ShardingView | null;
  after: ShardingView | null;
}

/** What the page shows of two payloads. */
export interface DiffPageView {
  names: [string, string];
  diff: PayloadDiff | null;
  /** The CLI's lines: the summary, then one per group. */
  lines: string[];
  /** Why a payload could not be compared (it does not decode, or is of the other's kind). */
  error: { input: "a" | "b"; path: string; code: string; detail: string } | null;
  /** A's inspection: its trees are the ones the page outlines, with the marks. */
  a: Inspected;
  marks: Map<string, DiffMark>;
  changes: ShardingChange[];
}

/** Causes drawn before and after: a leaf's sharding, and a NamedSharding's mesh. */
const DRAWN = new Set(["sharding", "mesh"]);

/** Compares two payloads for the page; never throws a DecodeError. */
export function diffView(a: NamedBytes, b: NamedBytes): DiffPageView {
  const view: DiffPageView = {
    names: [a.name, b.name],
    diff: null,
    lines: [],
    error: null,
    a: inspectView(a.bytes),
    marks: new Map(),
    changes: [],
  };
  let detailed: ReturnType<typeof diffInDetail>;
  try {
    detailed = diffInDetail(a.bytes, b.bytes);
  } catch (error) {
    if (!(error instanceof DiffInputError)) throw error;
    const { path, code, detail } = error.cause;
    view.error = { input: error.input, path, code, detail };
    return view;
  }
  const { diff, sides, located } = detailed;
  view.diff = diff;
  view.lines = formatDiff(diff, view.names).split("\n");
  view.marks = diffMarks(located);
  const paths = new Map<string, string[]>();
  const uses = new Map<DiffSide, Map<number, number>>();
  diff.groups.forEach((group, i) => {
    const first = located[i].first;
    if (!DRAWN.has(group.cause) || !first) return;
    const side = (s: DiffSide, at: number) =>
      drawnSharding(s, first, at, uses, paths, s === sides[0] ? "a" : "b");
    const before = side(sides[0], first.ia);
    const after = side(sides[1], first.ib);
    if (before || after) view.changes.push({ group: i, text: group.text, before, after });
  });
  return view;
}

/**
 * The sharding of leaf `at` of a part (its entry as its id, with the leaves of its payload
 * that use it), with that leaf as the example whose shards are drawn; null when it has none.
 */
function drawnSharding(
  side: DiffSide,
  first: FirstLeaves,
  at: number,
  uses: Map<DiffSide, Map<number, number>>,
  paths: Map<string, string[]>,
  input: "a" | "b",
): ShardingView | null {
  const part = side.parts.find((p) => p.name === first.part);
  const ref = part?.leafRefs[at] ?? -1;
  if (!part || ref < 0) return null;
  const object = side.objects[ref];
  let sharding: Sharding | null = null;
  let entry = ref;
  let shape: number[] = [];
  if (object instanceof ShapeDtypeStruct) {
    sharding = object.sharding;
    entry = side.references[ref];
    shape = [...object.shape];
  } else if (isSharding(object)) {
    sharding = object;
    shape = exampleShape(object);
  }
  if (!sharding) return null;
  const key = `${input}${part.name}`;
  let partPaths = paths.get(key);
  if (!partPaths) {
    partPaths = leafPaths(part.root);
    paths.set(key, partPaths);
  }
  let counts = uses.get(side);
  if (!counts) {
    counts = shardingUses(side);
    uses.set(side, counts);
  }
  const example = { path: `${part.name}${partPaths[at]}`, shape };
  return shardingView(entry, sharding, counts.get(entry) ?? 0, example);
}

/** How many leaves of a payload use each sharding entry: an array spec's, or the leaf itself. */
function shardingUses(side: DiffSide): Map<number, number> {
  const counts = new Map<number, number>();
  for (const { leafRefs } of side.parts) {
    for (let i = 0; i < leafRefs.length; i++) {
      const ref = leafRefs[i];
      if (ref < 0) continue;
      const entry = side.objects[ref] instanceof ShapeDtypeStruct ? side.references[ref] : ref;
      counts.set(entry, (counts.get(entry) ?? 0) + 1);
    }
  }
  return counts;
}
