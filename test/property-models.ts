import fc from "fast-check";
import {
  type AxisType,
  CustomNode,
  DeviceList,
  DTYPE_NAMES,
  DTypeValue,
  FunctionRef,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec,
  type PartitionSpecEntry,
  PickledFunction,
  PickledValue,
  PRNGImpl,
  type Program,
  ShapeDtypeStruct,
  type Sharding,
  type SharedObject,
  SingleDeviceSharding,
  type Specs,
  treeFlatten,
  tuple,
  UNCONSTRAINED,
  type Value,
  type ValueLeaf,
} from "../src";
import { DefaultDict, OrderedDict } from "../src/model/tree-values";

/**
 * Random models for the property tests, as plain JSON descriptions, so that Python can build
 * the very same model from JAX objects (python/tests/property_models.py). Every model is one
 * JAX accepts: device ids below 256, PartitionSpecs that name each mesh axis once, unreduced
 * and reduced only on Explicit axes, UNCONSTRAINED only with an Auto axis, leaves whose rank
 * covers their sharding, GSPMD shardings in the canonical form XLA gives back.
 */

export type EntryDesc = null | { axis: string } | { tuple: string[] } | { unconstrained: true };
export type ShardingDesc =
  | {
      named: {
        mesh: number;
        entries: EntryDesc[];
        unreduced: string[];
        reduced: string[];
        memoryKind: string | null;
      };
    }
  | { single: { device: number; memoryKind: string | null } }
  | {
      gspmd: {
        list: number;
        type: "replicated" | "maximal" | "other";
        dims: number[];
        devices: number[];
        replicate: boolean;
        memoryKind: string | null;
      };
    };
export type TreeDesc =
  | { leaf: number }
  | { none: true }
  | { tuple: TreeDesc[] }
  | { list: TreeDesc[] }
  | { dict: [string, TreeDesc][] }
  // colocated.v1.1: a dict of int keys, an OrderedDict, a defaultdict.
  | { intDict: [number, TreeDesc][] }
  | { ordered: [string | number, TreeDesc][] }
  | { defaultDict: { factory: "builtins.list" | null; entries: [string, TreeDesc][] } }
  | { namedtuple: { type: keyof typeof NAMEDTUPLES; values: TreeDesc[] } }
  | { custom: { tag: string; a: TreeDesc; b: TreeDesc } };
export type RefDesc = { list: number } | { mesh: number } | { sharding: number } | { leaf: number };

/** A model: shared objects by kind, leaves on them, and a tree (or a program) over the leaves. */
export interface ModelDesc {
  lists: number[][];
  meshes: { list: number; sizes: number[]; names: string[]; types: AxisType[] }[];
  shardings: ShardingDesc[];
  leaves: { shape: number[]; dtype: string; sharding: number | null; weakType: boolean }[];
  tree: TreeDesc;
  program?: {
    function: { byName: [string, string] } | { pickled: { pickle: number[]; refs: RefDesc[] } };
    devices: number;
    outputs: TreeDesc | null;
  };
}

/** Namedtuple and custom node types Python defines alike (property_models.py). */
export const NAMEDTUPLES = { Point: ["x", "y"], Box: ["lo", "hi", "size"] } as const;
export const MODULE = "property_models";
/** Functions Python finds by name. */
const FUNCTIONS: [string, string][] = [
  ["json", "dumps"],
  ["json", "loads"],
  [MODULE, "step"],
];
const MEMORY_KINDS = [null, null, "device", "pinned_host", "unpinned_host"];
const MAX_DEVICE = 256;

type Draw = fc.GeneratorValue;

const int = (g: Draw, min: number, max: number) => g(fc.integer, { min, max });
const pick = <T>(g: Draw, items: readonly T[]): T => items[int(g, 0, items.length - 1)];
const shuffled = <T>(g: Draw, items: readonly T[]): T[] =>
  g(fc.shuffledSubarray, [...items], {
    minLength: items.length,
    maxLength: items.length,
  });

/** `count` distinct device ids: a regular order (iota, transposed, offset) or an irregular one. */
function drawIds(g: Draw, count: number): number[] {
  const form = int(g, 0, 2);
  if (form === 0) {
    // offset + arange(n).reshape(dims).transpose(perm)
    const dims: number[] = [];
    let rest = count;
    for (let d = 2; d <= rest; d++) {
      while (rest % d === 0 && int(g, 0, 1)) {
        dims.push(d);
        rest /= d;
      }
    }
    if (rest > 1) dims.push(rest);
    if (dims.length === 0) dims.push(1);
    const perm = shuffled(
      g,
      dims.map((_, i) => i),
    );
    const strides = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
    const offset = int(g, 0, MAX_DEVICE - count);
    const ids: number[] = [];
    const walk = (k: number, base: number) => {
      if (k === perm.length) return void ids.push(offset + base);
      for (let j = 0; j < dims[perm[k]]; j++) walk(k + 1, base + j * strides[perm[k]]);
    };
    walk(0, 0);
    return ids;
  }
  const all = Array.from({ length: MAX_DEVICE }, (_, i) => i);
  const chosen = g(fc.shuffledSubarray, all, { minLength: count, maxLength: count });
  return form === 1 ? chosen : chosen.sort((a, b) => a - b);
}

function drawName(g: Draw, taken: string[]): string {
  for (;;) {
    const name = int(g, 0, 2)
      ? pick(g, ["x", "y", "z", "data", "model", "é", "𝔵"])
      : g(fc.string, { unit: "binary", minLength: 1, maxLength: 3 });
    if (!taken.includes(name)) return name;
  }
}

function drawSpec(g: Draw, mesh: ModelDesc["meshes"][number]) {
  const axes = shuffled(g, mesh.names);
  const typeOf = (a: string) => mesh.types[mesh.names.indexOf(a)];
  const entries: EntryDesc[] = [];
  let next = 0;
  const count = int(g, 0, 4);
  for (let i = 0; i < count; i++) {
    const form = int(g, 0, 3);
    if (form === 1 && next < axes.length) entries.push({ axis: axes[next++] });
    else if (form === 2 && next + 2 <= axes.length) {
      const size = int(g, 2, axes.length - next);
      entries.push({ tuple: axes.slice(next, next + size) });
      next += size;
    } else if (form === 3 && mesh.types.includes("Auto")) entries.push({ unconstrained: true });
    else entries.push(null);
  }
  const unreduced: string[] = [];
  const reduced: string[] = [];
  for (const a of axes.slice(next)) {
    if (typeOf(a) !== "Explicit") continue;
    const role = int(g, 0, 2);
    if (role === 1) unreduced.push(a);
    if (role === 2) reduced.push(a);
  }
  return { entries, unreduced, reduced };
}

type GspmdDesc = Extract<ShardingDesc, { gspmd: unknown }>["gspmd"];

function drawGspmd(g: Draw, list: number, size: number): GspmdDesc {
  const memoryKind = pick(g, MEMORY_KINDS);
  const form = size >= 2 ? int(g, 0, 2) : int(g, 0, 1);
  const plain = { list, dims: [], devices: [] as number[], replicate: false, memoryKind };
  if (form === 0) return { ...plain, type: "replicated" };
  if (form === 1) return { ...plain, type: "maximal", devices: [int(g, 0, size - 1)] };
  const dims: number[] = [];
  let tiles = 1;
  for (let rank = int(g, 1, 3), i = 0; i < rank; i++) {
    const d = int(g, 1, 4);
    if (tiles * d > size) break;
    dims.push(d);
    tiles *= d;
  }
  if (tiles < 2) dims.splice(0, dims.length, 2, ...(size >= 4 && int(g, 0, 1) ? [2] : []));
  tiles = dims.reduce((a, b) => a * b, 1);
  const all = Array.from({ length: size }, (_, i) => i);
  const devices: number[] = g(fc.shuffledSubarray, all, { minLength: tiles, maxLength: tiles });
  const last = dims[dims.length - 1];
  const replicate = dims.length >= 2 && last >= 2 && last < tiles && int(g, 0, 1) === 1;
  if (replicate) {
    // XLA keeps each replicated group sorted.
    for (let i = 0; i < tiles; i += last)
      devices.splice(i, last, ...devices.slice(i, i + last).sort((a, b) => a - b));
  }
  return { list, type: "other", dims, devices, replicate, memoryKind };
}

/** The rank a leaf needs for its sharding. */
function rankOf(sharding: ShardingDesc | undefined): number {
  if (!sharding) return 0;
  if ("named" in sharding) return sharding.named.entries.length;
  if ("gspmd" in sharding) {
    const { type, dims, replicate } = sharding.gspmd;
    return type === "maximal" ? 1 : type === "other" ? dims.length - (replicate ? 1 : 0) : 0;
  }
  return 0;
}

/**
 * A tree whose containers now and then repeat one drawn before them, as a model's layers and
 * its optimizer state repeat (colocated.v1.1 writes them once): the same description twice,
 * which both languages build as two objects equal by value.
 */
function drawTree(g: Draw, leaves: number, depth = 0, drawn: TreeDesc[] = []): TreeDesc {
  if (drawn.length > 0 && int(g, 0, 5) === 0) return pick(g, drawn);
  const tree = drawNode(g, leaves, depth, drawn);
  if (!("leaf" in tree) && !("none" in tree)) drawn.push(tree);
  return tree;
}

function drawNode(g: Draw, leaves: number, depth: number, drawn: TreeDesc[]): TreeDesc {
  const form = depth >= 3 ? 0 : int(g, 0, 10);
  const children = (min: number, max: number) =>
    Array.from({ length: int(g, min, max) }, () => drawTree(g, leaves, depth + 1, drawn));
  switch (form) {
    case 1:
      return { none: true };
    case 2:
      return { tuple: children(0, 3) };
    case 3:
      return { list: children(0, 3) };
    case 4: {
      const keys: string[] = [];
      for (let n = int(g, 0, 3); keys.length < n; ) keys.push(drawName(g, keys));
      return { dict: keys.map((k) => [k, drawTree(g, leaves, depth + 1, drawn)]) };
    }
    case 5: {
      const type = pick(g, ["Point", "Box"] as const);
      return {
        namedtuple: {
          type,
          values: NAMEDTUPLES[type].map(() => drawTree(g, leaves, depth + 1, drawn)),
        },
      };
    }
    case 6: {
      const tag = pick(g, ["a", "tag", "w1"]);
      return {
        custom: {
          tag,
          a: drawTree(g, leaves, depth + 1, drawn),
          b: drawTree(g, leaves, depth + 1, drawn),
        },
      };
    }
    case 8: {
      const keys = shuffled(g, [-2, -1, 0, 1, 2, 3]).slice(0, int(g, 0, 3));
      return { intDict: keys.map((k) => [k, drawTree(g, leaves, depth + 1, drawn)]) };
    }
    case 9: {
      const keys: (string | number)[] = [];
      for (let n = int(g, 0, 3); keys.length < n; ) {
        const names = keys.filter((k): k is string => typeof k === "string");
        const k = int(g, 0, 1) ? drawName(g, names) : int(g, -2, 2);
        if (!keys.includes(k)) keys.push(k);
      }
      return { ordered: keys.map((k) => [k, drawTree(g, leaves, depth + 1, drawn)]) };
    }
    case 10: {
      const keys: string[] = [];
      for (let n = int(g, 0, 2); keys.length < n; ) keys.push(drawName(g, keys));
      const factory = pick(g, ["builtins.list", null] as const);
      return {
        defaultDict: {
          factory,
          entries: keys.map((k) => [k, drawTree(g, leaves, depth + 1, drawn)]),
        },
      };
    }
    default:
      return { leaf: int(g, 0, leaves - 1) };
  }
}

function drawModel(g: Draw, withProgram: boolean): ModelDesc {
  const meshes: ModelDesc["meshes"] = [];
  const lists: number[][] = [];
  for (let m = int(g, 0, 3); meshes.length < m; ) {
    const sizes = Array.from({ length: int(g, 0, 3) }, () => int(g, 1, 4));
    const names: string[] = [];
    for (const _ of sizes) names.push(drawName(g, names));
    const types = sizes.map(() => pick(g, ["Auto", "Explicit", "Manual"] as const));
    lists.push(
      drawIds(
        g,
        sizes.reduce((a, b) => a * b, 1),
      ),
    );
    meshes.push({ list: lists.length - 1, sizes, names, types });
  }
  lists.push(drawIds(g, int(g, 1, 16)));
  const shardings: ShardingDesc[] = [];
  for (let s = int(g, 0, 4); shardings.length < s; ) {
    const form = int(g, 0, 2);
    if (form === 0 && meshes.length > 0) {
      const mesh = int(g, 0, meshes.length - 1);
      const spec = drawSpec(g, meshes[mesh]);
      shardings.push({ named: { mesh, ...spec, memoryKind: pick(g, MEMORY_KINDS) } });
    } else if (form === 1) {
      shardings.push({
        single: { device: int(g, 0, MAX_DEVICE - 1), memoryKind: pick(g, MEMORY_KINDS) },
      });
    } else {
      const list = int(g, 0, lists.length - 1);
      shardings.push({ gspmd: drawGspmd(g, list, lists[list].length) });
    }
  }
  // A key array needs a key type; the key_arrays_1_1 vector has them.
  const dtypes = DTYPE_NAMES.filter((d) => d !== "key");
  const leaves = Array.from({ length: int(g, 1, 6) }, () => {
    const sharding = shardings.length && int(g, 0, 3) ? int(g, 0, shardings.length - 1) : null;
    const rank = int(g, rankOf(sharding === null ? undefined : shardings[sharding]), 4);
    const dim = () => (int(g, 0, 20) ? int(g, 0, 8) : 2 ** 53 - 1);
    const shape = Array.from({ length: rank }, dim);
    return { shape, dtype: pick(g, dtypes), sharding, weakType: int(g, 0, 3) === 0 };
  });
  const model: ModelDesc = { lists, meshes, shardings, leaves, tree: drawTree(g, leaves.length) };
  if (withProgram) {
    const refs: RefDesc[] = Array.from({ length: int(g, 0, 3) }, (): RefDesc => {
      const kind = int(g, 0, 3);
      if (kind === 1 && meshes.length) return { mesh: int(g, 0, meshes.length - 1) };
      if (kind === 2 && shardings.length) return { sharding: int(g, 0, shardings.length - 1) };
      if (kind === 3) return { leaf: int(g, 0, leaves.length - 1) };
      return { list: int(g, 0, lists.length - 1) };
    });
    const pickle = Array.from({ length: int(g, 0, 8) }, () => int(g, 0, 255));
    model.program = {
      function: int(g, 0, 1) ? { byName: pick(g, FUNCTIONS) } : { pickled: { pickle, refs } },
      devices: int(g, 0, lists.length - 1),
      outputs: int(g, 0, 1) ? drawTree(g, leaves.length) : null,
    };
  }
  return model;
}

/** Random specs models. */
export const specsModel = fc.gen().map((g) => drawModel(g, false));
/** Random program models. */
export const programModel = fc.gen().map((g) => drawModel(g, true));

/**
 * A value leaf (colocated.v1.2) over a model's objects. TypeScript only: Python builds no
 * value models yet, so these are not part of the cross-language properties.
 */
export type ValueLeafDesc =
  | { ref: RefDesc }
  | { dtype: string; keyType?: { impl: string; keyShape: number[] } }
  | { prng: { name: string; keyShape: number[] } }
  | { byName: [string, string] }
  | { pickled: { pickle: number[]; refs: RefDesc[] } };

/** A model whose tree's leaf i is `values[i]` in a value, in place of the model's leaf i. */
export interface ValueModelDesc extends ModelDesc {
  values: ValueLeafDesc[];
}

const KEY_IMPLS = [
  { impl: "threefry2x32", keyShape: [2] },
  { impl: "rbg", keyShape: [4] },
  { impl: "unsafe_rbg", keyShape: [4] },
];

function drawRef(g: Draw, model: ModelDesc): RefDesc {
  const kind = int(g, 0, 3);
  if (kind === 1 && model.meshes.length) return { mesh: int(g, 0, model.meshes.length - 1) };
  if (kind === 2 && model.shardings.length)
    return { sharding: int(g, 0, model.shardings.length - 1) };
  if (kind === 3) return { leaf: int(g, 0, model.leaves.length - 1) };
  return { list: int(g, 0, model.lists.length - 1) };
}

function drawValueLeaf(g: Draw, model: ModelDesc): ValueLeafDesc {
  switch (int(g, 0, 5)) {
    case 0:
      return {
        dtype: pick(
          g,
          DTYPE_NAMES.filter((d) => d !== "key"),
        ),
      };
    case 1:
      return { dtype: "key", keyType: pick(g, KEY_IMPLS) };
    case 2: {
      const { impl, keyShape } = pick(g, KEY_IMPLS);
      return { prng: { name: impl, keyShape } };
    }
    case 3:
      return { byName: pick(g, FUNCTIONS) };
    case 4: {
      const pickle = Array.from({ length: int(g, 0, 8) }, () => int(g, 0, 255));
      const refs = Array.from({ length: int(g, 0, 3) }, () => drawRef(g, model));
      return { pickled: { pickle, refs } };
    }
    default:
      return { ref: drawRef(g, model) };
  }
}

/** Random value models: table objects (half of the leaves) among dtypes, PRNG impls, functions, pickles. */
export const valueModel = fc.gen().map((g): ValueModelDesc => {
  const model = drawModel(g, false);
  return { ...model, values: model.leaves.map(() => drawValueLeaf(g, model)) };
});

/** The TypeScript value a value model stands for. */
export function buildValue(desc: ValueModelDesc): Value {
  const { objects, tree } = parts(desc);
  const leaf = (v: ValueLeafDesc): ValueLeaf => {
    if ("ref" in v) return objects(v.ref);
    if ("dtype" in v) return new DTypeValue(v.dtype as ShapeDtypeStruct["dtype"], v.keyType);
    if ("prng" in v) return new PRNGImpl(v.prng.name, v.prng.keyShape);
    if ("byName" in v) return new FunctionRef(...v.byName);
    return new PickledValue(new Uint8Array(v.pickled.pickle), v.pickled.refs.map(objects));
  };
  const values = desc.values.map(leaf);
  return treeFlatten<ValueLeaf>(tree(desc.tree, (i) => values[i]));
}

/** The TypeScript model a description stands for, each described object built once. */
export function build(desc: ModelDesc): { specs: Specs; program?: Program } {
  const { objects, tree, leaves, lists } = parts(desc);
  const specs = treeFlatten<ShapeDtypeStruct>(tree(desc.tree, (i) => leaves[i]));
  if (!desc.program) return { specs };
  const { function: fn, devices, outputs } = desc.program;
  const program: Program = {
    function:
      "byName" in fn
        ? new FunctionRef(...fn.byName)
        : new PickledFunction(new Uint8Array(fn.pickled.pickle), fn.pickled.refs.map(objects)),
    inputs: specs,
    outputs:
      outputs === null ? undefined : treeFlatten<ShapeDtypeStruct>(tree(outputs, (i) => leaves[i])),
    devices: lists[devices],
  };
  return { specs, program };
}

/** A description's objects, each built once, and its trees over any leaves. */
function parts(desc: ModelDesc) {
  const lists = desc.lists.map((ids) => new DeviceList(ids));
  const meshes = desc.meshes.map((m) => new Mesh(lists[m.list], m.sizes, m.names, m.types));
  const shardings: Sharding[] = desc.shardings.map((s) => {
    if ("named" in s) {
      const { mesh, entries, unreduced, reduced, memoryKind } = s.named;
      const spec = PartitionSpec.create(entries.map(entry), { unreduced, reduced });
      return new NamedSharding(meshes[mesh], spec, { memoryKind });
    }
    if ("single" in s)
      return new SingleDeviceSharding(s.single.device, { memoryKind: s.single.memoryKind });
    const { list, type, dims, devices, replicate, memoryKind } = s.gspmd;
    const hlo = { type, tileDims: dims, tileDevices: devices, replicateOnLastTileDim: replicate };
    return new GSPMDSharding(lists[list], hlo, { memoryKind });
  });
  const leaves = desc.leaves.map(
    (l) =>
      new ShapeDtypeStruct(
        l.shape,
        l.dtype as ShapeDtypeStruct["dtype"],
        l.sharding === null ? null : shardings[l.sharding],
        {
          weakType: l.weakType,
        },
      ),
  );
  const tree = (t: TreeDesc, leaf: (i: number) => unknown): unknown => {
    const sub = (child: TreeDesc) => tree(child, leaf);
    if ("leaf" in t) return leaf(t.leaf);
    if ("none" in t) return null;
    if ("tuple" in t) return tuple(...t.tuple.map(sub));
    if ("list" in t) return t.list.map(sub);
    if ("dict" in t) return Object.fromEntries(t.dict.map(([k, v]) => [k, sub(v)]));
    if ("intDict" in t) return new Map(t.intDict.map(([k, v]) => [k, sub(v)]));
    if ("ordered" in t) {
      return new OrderedDict(
        t.ordered.map(([k, v]) => [typeof k === "number" ? BigInt(k) : k, sub(v)]),
      );
    }
    if ("defaultDict" in t) {
      const { factory, entries } = t.defaultDict;
      return new DefaultDict(
        factory,
        entries.map(([k, v]) => [k, sub(v)]),
      );
    }
    if ("namedtuple" in t) {
      const { type, values } = t.namedtuple;
      return new NamedTuple(`${MODULE}.${type}`, NAMEDTUPLES[type], values.map(sub));
    }
    const { tag, a, b } = t.custom;
    const data = new TextEncoder().encode(`j${JSON.stringify([tag])}`);
    return new CustomNode(`${MODULE}.Pair`, data, [sub(a), sub(b)]);
  };
  const objects = (r: RefDesc): SharedObject =>
    "list" in r
      ? lists[r.list]
      : "mesh" in r
        ? meshes[r.mesh]
        : "sharding" in r
          ? shardings[r.sharding]
          : leaves[r.leaf];
  return { objects, tree, leaves, lists };
}

function entry(e: EntryDesc): PartitionSpecEntry {
  if (e === null) return null;
  if ("axis" in e) return e.axis;
  if ("tuple" in e) return e.tuple;
  return UNCONSTRAINED;
}
