import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ProgramPayload, SpecsPayload, ValuePayload } from "../gen/ts/colocated/v1/payload";
import type { Entry } from "../gen/ts/colocated/v1/table";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import {
  DeviceList,
  DTypeValue,
  decodeProgram,
  decodeSpecs,
  decodeValue,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  FunctionRef,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec,
  PickledFunction,
  PickledValue,
  PRNGImpl,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  UnknownEntry,
  UnknownFunction,
  UnknownValueLeaf,
  type ValueLeaf,
} from "../src";
import { fourShardedLeaves, range } from "./fixtures";

/**
 * Payloads of a newer minor version (test/corpus/newer/): new fields in every message, in the
 * canonical position (after the known fields, sorted by tag), new entry kinds and a new function
 * kind. Decoding then encoding gives them back byte for byte, here and in Python
 * (python/tests/test_unknown_roundtrip.py). UPDATE_CORPUS=1 rewrites them.
 */
const DIR = join(__dirname, "corpus", "newer");

// biome-ignore lint/suspicious/noExplicitAny: the builders reach into every message
type Loose = any;

const varint = (field: number, value: number) => ({ [field * 8]: [new Uint8Array([value])] });
const bytesField = (field: number, bytes: number[]) => ({
  [field * 8 + 2]: [new Uint8Array([bytes.length, ...bytes])],
});

/** Gives every message of `message` a new field, numbered from 50 up by depth. */
function everywhere(message: Loose, depth = 0): void {
  if (typeof message !== "object" || message === null || message instanceof Uint8Array) return;
  if (Array.isArray(message)) {
    for (const item of message) everywhere(item, depth);
    return;
  }
  if (typeof message.$case === "string") {
    everywhere(message.value, depth);
    return;
  }
  message._unknownFields = { ...varint(50 + depth, depth), ...bytesField(60 + depth, [depth]) };
  for (const [key, value] of Object.entries(message)) {
    if (key !== "_unknownFields") everywhere(value, depth + 1);
  }
}

/** Two entries of a kind this schema lacks: a sharding a leaf uses, and one nothing uses. */
function newKinds(): Entry[] {
  return [
    { kind: undefined, _unknownFields: bytesField(30, [8, 1]) },
    { kind: undefined, _unknownFields: bytesField(31, [8, 2]) },
  ];
}

function specsPayload(): Uint8Array {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"], ["Explicit", "Auto"]);
  const sharding = new NamedSharding(mesh, PartitionSpec.create(["y"], { unreduced: ["x"] }));
  const tree = {
    a: new ShapeDtypeStruct([8, 4], "float32", sharding),
    b: new NamedTuple("collections.Point", ["x", "y"], [null, [new ShapeDtypeStruct([2], "int8")]]),
    c: new ShapeDtypeStruct([3], "bfloat16", new SingleDeviceSharding(5)),
    d: new ShapeDtypeStruct([5], "float32"),
  };
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  const message: Loose = SpecsPayload.decode(encodeSpecs(treedef, leaves));
  everywhere(message);
  message.header.minorVersion = 3;
  // Leaf d moves to a new ArraySpec on a sharding of a new kind; its old entry stays unused.
  const { entries } = message.table;
  const index = entries.length;
  const spec = { shape: [5n], dtype: 15, sharding: index, weakType: false };
  entries.push(...newKinds(), { kind: { $case: "arraySpec", value: spec } });
  message.specs.leaves[3] = index + 2;
  return SpecsPayload.encode(message).finish();
}

/** 1.3 str keys as a key trie (dotted keys whose parts repeat), new fields in the trie too. */
function keyTriePayload(): Uint8Array {
  const tree: Record<string, ShapeDtypeStruct> = {};
  for (const prefix of ["params", "opt_state.mu", "opt_state.nu"]) {
    for (const i of range(3)) {
      tree[`${prefix}.layers.${i}.attn.weight`] = new ShapeDtypeStruct([4, 4], "float32");
      tree[`${prefix}.layers.${i}.mlp.weight`] = new ShapeDtypeStruct([4, 8], "bfloat16");
    }
  }
  return newerSpecs(tree);
}

/**
 * 1.3 leaf copies: a tree with REPEATs, then 64 leaves cycling 4 shardings (4 written and a
 * copy), new fields in the Specs beside its leaves and copies.
 */
function leafCopiesPayload(): Uint8Array {
  const cycled = fourShardedLeaves([8, 4], "float32");
  const block = { b: new ShapeDtypeStruct([4], "bfloat16"), w: cycled[0] };
  const tree = { blocks: range(3).map(() => block), cycle: range(64).map((i) => cycled[i % 4]) };
  return newerSpecs(tree);
}

/** A specs tree's payload as a newer writer might send it: 1.3, new fields everywhere, new kinds. */
function newerSpecs(tree: unknown): Uint8Array {
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  const message: Loose = SpecsPayload.decode(encodeSpecs(treedef, leaves));
  everywhere(message);
  message.header.minorVersion = 3;
  message.table.entries.push(...newKinds());
  return SpecsPayload.encode(message).finish();
}

function programPayload(fn: Program["function"]): Uint8Array {
  const devices = new DeviceList(range(8, 16));
  const mesh = new Mesh(devices, [8], ["d"]);
  const leaf = new ShapeDtypeStruct([16], "int32", new NamedSharding(mesh, new PartitionSpec("d")));
  const inputs = treeFlatten<ShapeDtypeStruct>([leaf]);
  const message: Loose = ProgramPayload.decode(
    encodeProgram({ function: fn, inputs, outputs: inputs, devices }),
  );
  everywhere(message);
  message.header.minorVersion = 3;
  message.table.entries.push(...newKinds());
  if (message.function.function?.$case === "pickled") message.function.function.value.refs.push(4);
  return ProgramPayload.encode(message).finish();
}

/** A value payload (1.2) with new fields everywhere, new entry kinds and a new leaf kind last. */
function valuePayload(): Uint8Array {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
  const sharding = new NamedSharding(mesh, new PartitionSpec("x"));
  const tree = [
    mesh,
    { s: sharding, d: new DTypeValue("key", { impl: "threefry2x32", keyShape: [2] }) },
    new PRNGImpl("rbg", [4]),
    new PickledValue(new Uint8Array([0x80, 5, 0x4e, 0x2e]), [sharding]),
    new FunctionRef("json", "dumps"),
  ];
  const { treedef, leaves } = treeFlatten<ValueLeaf>(tree);
  const message: Loose = ValuePayload.decode(encodeValue(treedef, leaves));
  everywhere(message);
  message.header.minorVersion = 3;
  message.table.entries.push(...newKinds());
  message.value.leaves[5] = { leaf: undefined, _unknownFields: bytesField(6, [8, 1]) };
  return ValuePayload.encode(message).finish();
}

const PAYLOADS: Record<string, () => Uint8Array> = {
  specs: specsPayload,
  "specs-key-trie": keyTriePayload,
  "specs-leaf-copies": leafCopiesPayload,
  "program-by-name": () => programPayload(new FunctionRef("json", "dumps")),
  "program-pickled": () =>
    programPayload(new PickledFunction(new Uint8Array([0x80, 5, 0x4e, 0x2e]), [])),
  "program-new-function-kind": () =>
    programPayload(new UnknownFunction(new Uint8Array([0x1a, 0x02, 0x08, 0x07]))),
  value: valuePayload,
};

if (process.env.UPDATE_CORPUS) {
  mkdirSync(DIR, { recursive: true });
  for (const [name, bytes] of Object.entries(PAYLOADS))
    writeFileSync(join(DIR, `${name}.bin`), bytes());
}

const read = (name: string) => new Uint8Array(readFileSync(join(DIR, `${name}.bin`)));

describe("payloads of a newer minor version go through unchanged", () => {
  test("the committed files are what this test builds", () => {
    expect(readdirSync(DIR).sort()).toEqual(
      Object.keys(PAYLOADS)
        .map((n) => `${n}.bin`)
        .sort(),
    );
    for (const [name, bytes] of Object.entries(PAYLOADS)) expect(read(name)).toEqual(bytes());
  });

  test("specs: decode then encode gives the same bytes", () => {
    const bytes = read("specs");
    const { treedef, leaves } = decodeSpecs(bytes);
    expect(leaves.at(-1)?.sharding).toBeInstanceOf(UnknownEntry);
    expect(encodeSpecs(treedef, leaves)).toEqual(bytes);
  });

  test("specs-key-trie: decode then encode gives the same bytes, new fields in the trie kept", () => {
    const bytes = read("specs-key-trie");
    const trie: Loose = SpecsPayload.decode(bytes).specs?.treedef?.keyTrie;
    expect(trie?.nodes.length).toBeGreaterThan(0);
    expect(Object.keys(trie?._unknownFields ?? {}).length).toBeGreaterThan(0);
    const { treedef, leaves } = decodeSpecs(bytes);
    expect(encodeSpecs(treedef, leaves)).toEqual(bytes);
  });

  test("specs-leaf-copies: decode then encode gives the same bytes, new fields in the specs kept", () => {
    const bytes = read("specs-leaf-copies");
    const specs: Loose = SpecsPayload.decode(bytes).specs;
    expect(specs.leafCopies.length).toBeGreaterThanOrEqual(3);
    expect(specs.treedef.kinds).toContain(NodeKind.NODE_KIND_REPEAT);
    expect(Object.keys(specs._unknownFields ?? {}).length).toBeGreaterThan(0);
    const { treedef, leaves } = decodeSpecs(bytes);
    expect(leaves.length).toBe(70);
    expect(leaves.slice(6, 10).map((leaf) => leaf.sharding)).toEqual(
      leaves.slice(66).map((leaf) => leaf.sharding),
    );
    expect(encodeSpecs(treedef, leaves)).toEqual(bytes);
  });

  test.each(["program-by-name", "program-pickled", "program-new-function-kind"])(
    "%s: decode then encode gives the same bytes",
    (name) => {
      const bytes = read(name);
      const program = decodeProgram(bytes);
      expect(encodeProgram(program)).toEqual(bytes);
    },
  );

  test("value: decode then encode gives the same bytes; a new leaf kind is an UnknownValueLeaf", () => {
    const bytes = read("value");
    const { treedef, leaves } = decodeValue(bytes);
    expect(leaves.at(-1)).toBeInstanceOf(UnknownValueLeaf);
    expect(leaves[2]).toBeInstanceOf(NamedSharding);
    expect(encodeValue(treedef, leaves)).toEqual(bytes);
    // A value with a leaf changed is written afresh, the leaf of a new kind still in it.
    const changed = [...leaves];
    changed[4] = new FunctionRef("json", "loads");
    const fresh = encodeValue(treedef, changed);
    expect(fresh.length).toBeLessThan(bytes.length);
    expect(decodeValue(fresh).leaves.at(-1)).toEqual(leaves.at(-1));
  });

  test("a new function kind is kept as an UnknownFunction", () => {
    const { function: fn } = decodeProgram(read("program-new-function-kind"));
    expect(fn).toBeInstanceOf(UnknownFunction);
  });
});
