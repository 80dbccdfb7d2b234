/**
 * What `diffPayloads` returns, and `colocated-wire diff --json` prints: plain data, the same in
 * Python (`colocated_wire.diff(a, b).to_json()`), so tools, the inspector and the plugin's
 * logging read one shape. docs/diff.md describes every field; `version` changes with the shape.
 */

/** A JSON value, as the result holds the two sides' values. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The version of this shape. */
export const DIFF_VERSION = 1;

/** What a group's difference is about; docs/diff.md lists the `a` and `b` of each. */
export type DiffCause =
  // The payload: its header's version and writer, a program's function and devices, a part
  // one side lacks.
  | "header"
  | "writer"
  | "function"
  | "devices"
  | "part"
  // The tree: a node of another type, keys or fields added or removed, a length, an
  // OrderedDict's order, a custom node's data or pickled class, a defaultdict's factory.
  | "node"
  | "keys"
  | "length"
  | "key_order"
  | "node_data"
  | "class_pickle"
  | "default_factory"
  // A leaf: its shape, dtype, key shape, weak type, sharding, and its sharding's mesh.
  | "shape"
  | "dtype"
  | "key_shape"
  | "weak_type"
  | "sharding"
  | "mesh"
  // A value's leaf (and a pickle's ref): of another kind, a PRNG impl, a pickle, a device
  // list; a function by name is "function", a newer kind's leaf "leaf".
  | "leaf_kind"
  | "prng_impl"
  | "pickle"
  | "leaf";

/** One field that differs within a table object (a sharding, a mesh, a device list). */
export interface DiffDetail {
  /** Which field: "spec", "spec.unreduced", "memory_kind", "axis_names", "devices", ... */
  field: string;
  a: Json;
  b: Json;
  /** For a device order, how it changed (docs/diff.md): swapped, iota, reordered, set, count. */
  change: Json;
  /** In words: "PartitionSpec('data', 'model') to ('model', 'data')". */
  text: string;
}

/** Where a group's difference is: a tree path with `[*]` where indices or keys vary. */
export interface DiffPath {
  /** "specs", "input", "output" or "value". */
  part: string;
  /** As JAX's keystr writes it, `["layers"][*]["w"]`; "" for the root. */
  path: string;
  /** How many leaves (or, for a tree difference, nodes) the path stands for. */
  count: number;
}

/** Every place one cause is found, the leaves it covers, and the cause itself. */
export interface DiffGroup {
  cause: DiffCause;
  /** The difference in words, as the CLI prints it after the places. */
  text: string;
  /** Places: leaves for a leaf's cause, nodes for the tree's, 0 for the payload's. */
  count: number;
  /** The leaves it covers: the leaves differing, or on one side only. */
  leaves: number;
  paths: DiffPath[];
  /** The table entries the cause names, by index in each payload (null: none on that side). */
  entries: { a: number | null; b: number | null } | null;
  a: Json;
  b: Json;
  details: DiffDetail[];
}

/** Two payloads compared. */
export interface PayloadDiff {
  version: typeof DIFF_VERSION;
  kind: "specs" | "program" | "value";
  /** The bytes are identical. */
  same: boolean;
  /** The contents are equal (no group); the bytes may still differ (table order, a writer). */
  equal: boolean;
  bytes: { a: number; b: number };
  leaves: { a: number; b: number };
  /** Leaves that differ: pairs that are not equal, and leaves on one side only. */
  differingLeaves: number;
  groups: DiffGroup[];
}
