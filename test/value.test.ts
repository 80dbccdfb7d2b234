import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  PayloadKind,
  type Value as ValueMessage,
  ValuePayload,
} from "../gen/ts/colocated/v1/payload";
import { DType } from "../gen/ts/colocated/v1/table";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import {
  DecodeError,
  DeviceList,
  DTypeValue,
  decodeSpecs,
  decodeValue,
  EncodeError,
  encodeValue,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec as P,
  PickledValue,
  PRNGImpl,
  payloadKindOf,
  payloadToJson,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  tuple,
  type ValueLeaf,
} from "../src";
import { ValueObject } from "../src/model/value-key";
import { smallMesh } from "./fixtures";
import { VALUE_TREES } from "./vector-cases";

// Value payloads (colocated.v1.2): a pytree whose leaves are table objects, dtypes, PRNG impls,
// functions by name and pickles. The CLI test runs the built command line (npm test builds).

const CLI = join(__dirname, "..", "dist", "src", "cli", "main.js");
const VECTORS = join(__dirname, "vectors");

const encode = (tree: unknown, targetMinorVersion?: number) => {
  const { treedef, leaves } = treeFlatten<ValueLeaf>(tree);
  return encodeValue(treedef, leaves, { targetMinorVersion });
};

/** The message of a value, for a test to break, and its bytes again. */
const message = (tree: unknown) => ValuePayload.decode(encode(tree));
const bytesOf = (m: ValuePayload) => ValuePayload.encode(m).finish();

function thrown<E extends Error>(type: new (...args: never[]) => E, run: () => unknown): E {
  try {
    run();
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error("nothing was thrown");
}

const decodeError = (m: ValuePayload, options = {}) =>
  thrown(DecodeError, () => decodeValue(bytesOf(m), options));

/** A leaf and its model equal: table objects by value, the others field by field. */
function expectSameLeaf(back: ValueLeaf, was: ValueLeaf): void {
  if (was instanceof ValueObject) expect(was.equals(back)).toBe(true);
  else expect(back).toEqual(was);
}

describe("the value vectors", () => {
  test.each(Object.keys(VALUE_TREES))("%s: decodes to its model, which encodes to it", (name) => {
    const bytes = new Uint8Array(readFileSync(join(VECTORS, `${name}.bin`)));
    expect(payloadKindOf(bytes)).toBe("value");
    const model = treeFlatten<ValueLeaf>(VALUE_TREES[name]());
    const back = decodeValue(bytes);
    expect(back.treedef.equals(model.treedef)).toBe(true);
    expect(back.leaves.length).toBe(model.leaves.length);
    for (const [i, leaf] of back.leaves.entries()) expectSameLeaf(leaf, model.leaves[i]);
    const forItsVersion = { targetMinorVersion: 2 }; // the vectors are written for 1.2
    expect(encodeValue(back.treedef, back.leaves, forItsVersion)).toEqual(bytes);
    expect(encodeValue(model.treedef, model.leaves, forItsVersion)).toEqual(bytes);
  });

  test("value_shardings_1_2: one device list, one mesh, the equal shardings one entry", () => {
    const bytes = readFileSync(join(VECTORS, "value_shardings_1_2.bin"));
    const { table, value } = ValuePayload.decode(bytes);
    expect(table?.entries.map((e) => e.kind?.$case)).toEqual([
      "deviceList",
      "mesh",
      "namedSharding",
      "namedSharding",
      "singleDeviceSharding",
    ]);
    expect(value?.leaves.map((l) => l.leaf)).toEqual(
      [2, 3, 2, 4].map((value) => ({ $case: "entry", value })),
    );
    const [x, y, again] = decodeValue(bytes).leaves as NamedSharding[];
    expect(again).toBe(x);
    expect(y.mesh).toBe(x.mesh);
  });
});

describe("shared objects in a value are written once", () => {
  const mesh = smallMesh();
  const s1 = new NamedSharding(mesh, new P("x"));
  const s2 = new NamedSharding(mesh, new P("y"));

  test("[s1, s2] is smaller than twice [s1], with one mesh entry", () => {
    const both = encode([s1, s2]);
    expect(both.length).toBeLessThan(2 * encode([s1]).length);
    const kinds = ValuePayload.decode(both).table?.entries.map((e) => e.kind?.$case);
    expect(kinds?.filter((k) => k === "mesh")).toHaveLength(1);
    expect(kinds?.filter((k) => k === "deviceList")).toHaveLength(1);
  });

  test("[s1, s1] (an equal object) is smaller than [s1, s2], and decodes to one object", () => {
    const same = encode([s1, new NamedSharding(smallMesh(), new P("x"))]);
    expect(same.length).toBeLessThan(encode([s1, s2]).length);
    const [a, b] = decodeValue(same).leaves;
    expect(a).toBe(b);
  });

  test("a pickle's refs are table objects, shared with the leaves", () => {
    const pickle = new Uint8Array([0x80, 5, 0x4e, 0x2e]);
    const bytes = encode([s1, new PickledValue(pickle, [mesh, s1])]);
    const { table, value } = ValuePayload.decode(bytes);
    expect(table?.entries).toHaveLength(3);
    expect(value?.leaves[1].leaf).toMatchObject({
      $case: "pickled",
      value: { pickle, refs: [1, 2] },
    });
    const [leaf, pickled] = decodeValue(bytes).leaves as [NamedSharding, PickledValue];
    expect(pickled.refs[1]).toBe(leaf);
    expect(pickled.refs[0]).toBe(leaf.mesh);
  });

  test("an array spec leaf is lowered as a specs leaf is: its sharding's entries first", () => {
    const spec = new ShapeDtypeStruct([8], "float32", s1);
    const { table, value } = ValuePayload.decode(encode(tuple(spec, s1)));
    const kinds = table?.entries.map((e) => e.kind?.$case);
    expect(kinds).toEqual(["deviceList", "mesh", "namedSharding", "arraySpec"]);
    expect(value?.leaves.map((l) => l.leaf?.value)).toEqual([3, 2]);
  });
});

describe("value payloads need colocated.v1.2", () => {
  const tree = [new DTypeValue("float32")];

  test("a target before 1.2 is an EncodeError naming the version", () => {
    const error = thrown(EncodeError, () => encode(tree, 1));
    expect(error.path).toBe("header.kind");
    expect(error.message).toBe(
      "header.kind: a value payload needs colocated.v1.2; the target is 1.1",
    );
  });

  test("a header of 1.1 with PAYLOAD_KIND_VALUE is refused, naming the version", () => {
    const m = message(tree);
    m.header = { majorVersion: 1, minorVersion: 1, kind: PayloadKind.PAYLOAD_KIND_VALUE };
    const error = decodeError(m);
    expect([error.path, error.code]).toEqual(["header.kind", "unsupported-version"]);
    expect(error.detail).toBe("a value payload needs colocated.v1.2; the header says 1.1");
  });

  test("a reader limited to 1.1 refuses a value payload, naming the version", () => {
    const error = decodeError(message(tree), { maxMinorVersion: 1 });
    expect([error.path, error.code]).toEqual(["header.kind", "unsupported-version"]);
    expect(error.detail).toBe("a value payload needs colocated.v1.2; the agreed version is 1.1");
    expect(decodeValue(encode(tree, 2), { maxMinorVersion: 2 }).leaves).toEqual(tree);
  });

  test("a value payload is no specs payload, and the other way round", () => {
    const error = thrown(DecodeError, () => decodeSpecs(encode(tree)));
    expect([error.path, error.code]).toEqual(["header.kind", "wrong-payload-kind"]);
    expect(error.detail).toBe("this is a value payload, not a specs payload");
  });
});

describe("a value that cannot be encoded is an EncodeError at its leaf", () => {
  test.each<[string, unknown, string]>([
    ["not a leaf kind", [new DTypeValue("int8"), 3], "value.leaves[1]"],
    ["a key dtype without its key type", [new DTypeValue("key")], "value.leaves[0].dtype.key_type"],
    [
      "a key type on another dtype",
      [new DTypeValue("int8", { impl: "rbg", keyShape: [4] })],
      "value.leaves[0].dtype.key_type",
    ],
    ["a PRNG impl without a name", [new PRNGImpl("", [2])], "value.leaves[0].prng_impl.impl"],
    ["a function without a module", [new FunctionRef("", "f")], "value.leaves[0].function"],
    ["a bad table object", [new SingleDeviceSharding(-1)], "value.leaves[0]"],
  ])("%s", (_, tree, path) => {
    expect(thrown(EncodeError, () => encode(tree)).path).toBe(path);
  });
});

describe("a value that does not decode says where and why", () => {
  const mesh = smallMesh();
  const fry = { impl: "threefry2x32", keyShape: [2] };
  /** Leaves 0-4 of every kind: a mesh, a dtype, a PRNG impl, a function, a pickle. */
  const tree = () => [
    mesh,
    new DTypeValue("key", fry),
    new PRNGImpl("threefry2x32", [2]),
    new FunctionRef("json", "dumps"),
    new PickledValue(new Uint8Array([1]), [mesh.devices]),
  ];
  type Leaves = ValueMessage["leaves"];

  test.each<[string, (m: ValuePayload, leaves: Leaves) => void, string, string]>([
    ["no value", (m) => delete m.value, "value", "missing"],
    ["no treedef", (m) => delete m.value?.treedef, "value.treedef", "missing"],
    ["a leaf too few", (_, l) => l.pop(), "value.leaves", "invalid-tree"],
    [
      "a leaf too many",
      (_, l) => l.push({ leaf: { $case: "entry", value: 0 } }),
      "value.leaves",
      "invalid-tree",
    ],
    [
      "an entry past the table",
      (_, l) => (l[0].leaf = { $case: "entry", value: 2 }),
      "value.leaves[0].entry",
      "reference-out-of-range",
    ],
    ["a leaf of no kind", (_, l) => (l[3].leaf = undefined), "value.leaves[3]", "missing"],
    [
      "a dtype of no known value",
      (_, l) => (l[1].leaf = { $case: "dtype", value: { dtype: 999 as DType } }),
      "value.leaves[1].dtype.dtype",
      "unknown-enum",
    ],
    [
      "a key dtype without its key type",
      (_, l) => (l[1].leaf = { $case: "dtype", value: { dtype: DType.D_TYPE_KEY } }),
      "value.leaves[1].dtype.key_type",
      "missing",
    ],
    [
      "a key type on another dtype",
      (_, l) => {
        const keyType = { impl: "threefry2x32", keyShape: [2n] };
        l[1].leaf = { $case: "dtype", value: { dtype: DType.D_TYPE_INT8, keyType } };
      },
      "value.leaves[1].dtype.key_type",
      "invalid-value",
    ],
    [
      "a PRNG impl without a name",
      (_, l) => (l[2].leaf = { $case: "prngImpl", value: { impl: "", keyShape: [2n] } }),
      "value.leaves[2].prng_impl.impl",
      "invalid-value",
    ],
    [
      "a function without a qualname",
      (_, l) => (l[3].leaf = { $case: "function", value: { module: "json", qualname: "" } }),
      "value.leaves[3].function.qualname",
      "missing",
    ],
    [
      "a pickle's ref past the table",
      (_, l) =>
        (l[4].leaf = { $case: "pickled", value: { pickle: new Uint8Array(), refs: [0, 7] } }),
      "value.leaves[4].pickled.refs[1]",
      "reference-out-of-range",
    ],
  ])("%s", (_, breakIt, path, code) => {
    const m = message(tree());
    breakIt(m, m.value?.leaves ?? []);
    const error = decodeError(m);
    expect([error.path, error.code]).toEqual([path, code]);
  });

  test("the wire scan bounds a value's leaves and a pickle's refs", () => {
    const m = message(tree());
    const many = Array.from({ length: 5 }, () => ({ leaf: { $case: "entry" as const, value: 0 } }));
    m.value?.leaves.push(...many);
    const error = decodeError(m, { limits: { maxTreeNodes: 8 } });
    expect([error.path, error.code]).toEqual(["value.leaves", "limit-exceeded"]);
    const refs = message(tree());
    const pickled = refs.value?.leaves[4].leaf;
    if (pickled?.$case === "pickled") pickled.value.refs = [0, 0, 0, 0];
    const scanned = decodeError(refs, { limits: { maxTableEntries: 3 } });
    expect([scanned.path, scanned.code]).toEqual([
      "value.leaves[4].pickled.refs",
      "limit-exceeded",
    ]);
  });

  test("a REPEAT of a subtree with leaves, as another writer may write, reads as copies", () => {
    const m = message([
      [mesh, mesh.devices],
      [mesh, mesh.devices],
    ]);
    const treedef = m.value?.treedef;
    // [LIST 2, LIST 2, LEAVES 2, LIST 2, LEAVES 2] -> [LIST 2, LIST 2, LEAVES 2, REPEAT 1].
    expect(treedef?.kinds).toHaveLength(5);
    treedef?.kinds.splice(3, 2, NodeKind.NODE_KIND_REPEAT);
    treedef?.arities.splice(3, 2, 1);
    m.value?.leaves.splice(2, 2);
    const { leaves } = decodeValue(bytesOf(m));
    expect(leaves).toHaveLength(4);
    expect(leaves[2]).toBe(leaves[0]);
    expect(leaves[3]).toBe(leaves[1]);
  });
});

describe("the CLI and the JSON form read value payloads", () => {
  test("inspect names the kind, the leaves and the table objects", () => {
    const file = join(VECTORS, "value_dtypes_1_2.bin");
    const out = execFileSync("node", [CLI, "inspect", file], { encoding: "utf8" });
    expect(out).toMatch(
      /^value payload: \d+ bytes, table \d+ bytes in 5 entries; 6 leaves: 3 dtype, 1 prngImpl, 1 arraySpec, 1 deviceList\n/,
    );
    expect(out).toMatch(/3 {2}arraySpec +\d+ {2}1 value leaf/);
    expect(out).toContain("    2  [2]  dtype: dtype key<fry>\n");
    expect(out).toContain("    3  [3]  prngImpl: PRNG impl threefry2x32 (key shape [2])\n");
    expect(out).toContain(
      "    4  [4]  arraySpec (entry 3): key<fry>[4] NamedSharding(mesh x=2 y=4 of 8 devices, P(x))\n",
    );
    expect(out).toContain('    5  [5]["a"]  deviceList (entry 4): DeviceList(2 devices: 3, 1)');
  });

  test("inspect --json lists each leaf by kind, and a sharding leaf's grid", () => {
    const file = join(VECTORS, "value_shardings_1_2.bin");
    const view = JSON.parse(
      execFileSync("node", [CLI, "inspect", file, "--json"], { encoding: "utf8" }),
    );
    expect(view.header).toEqual({ majorVersion: 1, minorVersion: 2, kind: "value" });
    expect(view.parts[0].leaves.map((l: { kind: string }) => l.kind)).toEqual([
      "namedSharding",
      "namedSharding",
      "namedSharding",
      "singleDeviceSharding",
    ]);
    expect(view.parts[0].leaves.map((l: { sharding: number }) => l.sharding)).toEqual([0, 1, 0, 2]);
    expect(view.shardings[0]).toMatchObject({ leaves: 2, example: { shape: [2] }, problem: null });
  });

  test("the JSON form of a value payload names its leaves' cases", () => {
    const json = payloadToJson(encode([new DTypeValue("float32"), new FunctionRef("m", "f")]));
    expect((json as { value: unknown }).value).toMatchObject({
      leaves: [
        { dtype: { dtype: "D_TYPE_FLOAT32" } },
        { function: { module: "m", qualname: "f" } },
      ],
    });
  });
});

test("a device list leaf keeps its order", () => {
  const [list] = decodeValue(encode([new DeviceList([3, 1])])).leaves as DeviceList[];
  expect(list.ids).toEqual([3, 1]);
  expect(
    decodeValue(encode(new Mesh(new DeviceList([1, 0]), [2], ["a"]))).leaves[0],
  ).toBeInstanceOf(Mesh);
});
