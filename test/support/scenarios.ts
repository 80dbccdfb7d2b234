/**
 * The benchmark's scenarios, defined once. The TypeScript side builds model objects from a
 * Case (build-specs.ts); the Python side gets the same Case as JSON and builds real JAX
 * objects from it (jax_bench.py), so every side encodes the same content.
 */

import { seededRandom } from "./seeded-random";
import {
  type Blueprint,
  countLeaves,
  FLAT_MESH,
  s5Blueprint,
  s6Blueprint,
  s7Blueprint,
  TRAINING_MESH,
} from "./training-trees";

/** A PartitionSpec entry as JSON: None, one axis name, or a tuple of axis names. */
export type SpecEntry = null | string | string[];

export type ScenarioId = "S1" | "S2" | "S3" | "S4" | "S5" | "S6" | "S7";

/**
 * "list": a list of leaves. "dict": a flat dict {"p000": leaf0, ...}, keys zero-padded; both of
 * leafShape and dtype. "nested": the blueprint's tree (S5 and S6, test/support/training-trees.ts).
 */
export type CaseTree =
  | { tree: "list" | "dict"; leafShape: number[]; dtype: "float32" }
  | { tree: "nested"; blueprint: Blueprint };

export type Case = CaseTree & {
  /** Unique and readable: "S1", "S3 shuffled 4096", "S4 100000". */
  id: string;
  scenario: ScenarioId;
  leafCount: number;
  meshShape: number[];
  axisNames: string[];
  /** "regular": device ids 0..n-1 in mesh order; "shuffled": a seeded permutation of them. */
  order: "regular" | "shuffled";
  /** Leaf i is sharded by shardings[i % shardings.length]; a nested tree's leaf kinds name theirs. */
  shardings: SpecEntry[][];
  /** Each leaf gets a NamedSharding (and PartitionSpec) of its own, as programs make them. */
  freshShardings?: boolean;
  /** Whether (d), the inlined formats, runs for this case (see INLINED_MAX_IDS). */
  inlined: boolean;
};

/** S1's two shardings over a ("data", "model") mesh, reused by S3 and S4. */
const TWO_SHARDINGS: SpecEntry[][] = [
  ["data", "model"],
  [null, "model"],
];

/** S2's 16 distinct shardings over a ("data", "fsdp", "model") mesh. */
const SIXTEEN_SHARDINGS: SpecEntry[][] = [
  ["data", "model"],
  ["fsdp", "model"],
  [["data", "fsdp"], "model"],
  ["data", null],
  [null, "model"],
  ["model", null],
  ["fsdp", null],
  [null, "fsdp"],
  [["data", "fsdp"], null],
  [null, ["fsdp", "model"]],
  ["data", "fsdp"],
  ["model", "fsdp"],
  ["fsdp", "data"],
  [["data", "model"], "fsdp"],
  [],
  [null, "data"],
];

/**
 * The inlined formats (d) write one full device list per leaf, so they cost leaves x devices.
 * S2 (10,000 x 4,096 = 41M ids, about 80 MB and 15 s per pickled run) is the largest measured;
 * beyond that one run takes minutes and gigabytes and adds nothing: (d) is linear by design.
 */
export const INLINED_MAX_IDS = 50_000_000;

/** (d) also stops at this many devices: S3's 262,144 devices would be 26M ids, over a minute a run. */
export const INLINED_MAX_DEVICES = 65_536;

/** S3's device counts: every doubling from 8 to 262,144. */
export const S3_DEVICE_COUNTS = Array.from({ length: 16 }, (_, i) => 8 * 2 ** i);

/** S4's leaf counts. */
export const S4_LEAF_COUNTS = [10, 100, 1_000, 10_000, 100_000];

const LEAF = { leafShape: [1024, 512], dtype: "float32" } as const;

type FlatFields = Omit<Case & { tree: "list" | "dict" }, "leafShape" | "dtype" | "inlined">;

function makeCase(fields: FlatFields): Case {
  const devices = fields.meshShape.reduce((a, b) => a * b, 1);
  const inlined =
    !fields.freshShardings &&
    devices <= INLINED_MAX_DEVICES &&
    fields.leafCount * devices <= INLINED_MAX_IDS;
  return { ...fields, leafShape: [...LEAF.leafShape], dtype: LEAF.dtype, inlined };
}

/** S1: 1,000 leaves on a 128x8 mesh, two shardings; also as a flat dict, like JAX's figures. */
export function s1Cases(): Case[] {
  return (["list", "dict"] as const).map((tree) =>
    makeCase({
      id: tree === "list" ? "S1" : "S1 dict",
      scenario: "S1",
      tree,
      leafCount: 1_000,
      meshShape: [128, 8],
      axisNames: ["data", "model"],
      order: "regular",
      shardings: TWO_SHARDINGS,
    }),
  );
}

/** S2: 10,000 leaves on a 16x32x8 mesh of 4,096 devices, 16 shardings. */
export function s2Cases(): Case[] {
  return [
    makeCase({
      id: "S2",
      scenario: "S2",
      tree: "list",
      leafCount: 10_000,
      meshShape: [16, 32, 8],
      axisNames: ["data", "fsdp", "model"],
      order: "regular",
      shardings: SIXTEEN_SHARDINGS,
    }),
  ];
}

/**
 * S3: 100 leaves on an (n/8)x8 mesh, n from 8 to 262,144, regular and shuffled order; and
 * "S3 fresh", the same with a NamedSharding made afresh for every leaf. (d) does not depend on
 * sharing, so it runs on the first only.
 */
export function s3Cases(): Case[] {
  return [false, true].flatMap((freshShardings) =>
    S3_DEVICE_COUNTS.flatMap((n) =>
      (["regular", "shuffled"] as const).map((order) =>
        makeCase({
          id: `S3${freshShardings ? " fresh" : ""} ${order} ${n}`,
          scenario: "S3",
          tree: "list",
          leafCount: 100,
          meshShape: [n / 8, 8],
          axisNames: ["data", "model"],
          order,
          shardings: TWO_SHARDINGS,
          ...(freshShardings ? { freshShardings } : {}),
        }),
      ),
    ),
  );
}

/** S4: 10 to 100,000 leaves on S1's mesh and shardings. */
export function s4Cases(): Case[] {
  return S4_LEAF_COUNTS.map((leafCount) =>
    makeCase({
      id: `S4 ${leafCount}`,
      scenario: "S4",
      tree: "list",
      leafCount,
      meshShape: [128, 8],
      axisNames: ["data", "model"],
      order: "regular",
      shardings: TWO_SHARDINGS,
    }),
  );
}

/**
 * S5, a transformer's parameters and Adam state, and S6, a model of dataclasses, namedtuples and
 * None with optax's state, on a 3-axis mesh of 1,024 devices; S7, a Llama's parameters and Adam
 * moments in one flat dict keyed by dotted paths, on a 2-axis mesh of 128
 * (test/support/training-trees.ts). Each with a NamedSharding made afresh for every leaf, as a
 * program makes them. (d) does not run: it inlines every shared object, so fresh shardings
 * change nothing for it.
 */
export function trainingCases(): Case[] {
  const training = (
    id: "S5" | "S6" | "S7",
    blueprint: Blueprint,
    mesh: { meshShape: number[]; axisNames: string[] },
  ): Case => ({
    id,
    scenario: id,
    tree: "nested",
    blueprint,
    leafCount: countLeaves(blueprint.root),
    ...mesh,
    order: "regular",
    shardings: blueprint.shardings,
    freshShardings: true,
    inlined: false,
  });
  return [
    training("S5", s5Blueprint(), TRAINING_MESH),
    training("S6", s6Blueprint(), TRAINING_MESH),
    training("S7", s7Blueprint(), FLAT_MESH),
  ];
}

/**
 * Every case of a run: S1, S5, S6 and S7 with --quick; if a filter is given, only the cases whose id
 * contains it or one of its comma-separated parts ("S5,S6").
 */
export function allCases(quick: boolean, filter?: string): Case[] {
  const cases = quick
    ? [...s1Cases(), ...trainingCases()]
    : [...s1Cases(), ...s2Cases(), ...trainingCases(), ...s3Cases(), ...s4Cases()];
  if (filter === undefined) return cases;
  const parts = filter.split(",");
  return cases.filter((c) => parts.some((part) => c.id.includes(part)));
}

export function deviceCount(c: Case): number {
  return c.meshShape.reduce((a, b) => a * b, 1);
}

/** The device ids in mesh order. The shuffle is seeded, so every run and side sees the same. */
export function deviceIds(c: Case): number[] {
  const ids = Array.from({ length: deviceCount(c) }, (_, i) => i);
  if (c.order === "regular") return ids;
  // The Python side receives the ids, not the generator.
  const random = seededRandom(deviceCount(c));
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  return ids;
}

/** The dict key of leaf i: zero-padded, so sorted keys keep the leaves in order. */
export function leafKey(i: number, leafCount: number): string {
  return `p${String(i).padStart(String(leafCount - 1).length, "0")}`;
}
