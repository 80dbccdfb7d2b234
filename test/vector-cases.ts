import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  AxisType,
  DeviceList,
  DTYPE_NAMES,
  DTypeValue,
  type EncodeOptions,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  FunctionRef,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec as P,
  PRNGImpl,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  tuple,
  UNCONSTRAINED,
  type ValueLeaf,
  type Writer,
} from "../src";
import { dtypeSince } from "../src/entries/array-spec";
import { exampleProgram } from "../src/example";
import { DefaultDict, OrderedDict } from "../src/model/tree-values";
import { PYTHON_WRITER } from "./fixtures";

/**
 * The conformance cases, built from the TypeScript model. python/tests/vector_cases.py builds
 * the same cases from real JAX objects; both must give the committed bytes in test/vectors/.
 */
export interface VectorCase {
  name: string;
  bytes: () => Uint8Array;
}

const f32 = (shape: number[], sharding?: ShapeDtypeStruct["sharding"]) =>
  new ShapeDtypeStruct(shape, "float32", sharding);

const range = (n: number, start = 0) => Array.from({ length: n }, (_, i) => start + i);

/** The 1.0 cases are written for a 1.0 reader, so their bytes are those 1.0 wrote. */
const V1_0 = { targetMinorVersion: 0 };

function specs(tree: unknown, options: EncodeOptions = V1_0): Uint8Array {
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return encodeSpecs(treedef, leaves, options);
}

/** The 1.1 cases are written for a 1.1 reader. */
const V1_1 = { targetMinorVersion: 1 };

/** A value payload (colocated.v1.2) of any pytree, written for a 1.2 reader. */
function value(tree: unknown): Uint8Array {
  const { treedef, leaves } = treeFlatten<ValueLeaf>(tree);
  return encodeValue(treedef, leaves, { targetMinorVersion: 2 });
}

/** arange(16).reshape(2, 2, 4).transpose(2, 0, 1): a 4x2x2 mesh whose device order is transposed. */
function mesh3dTransposed(): Mesh {
  const ids = [];
  for (let k = 0; k < 4; k++)
    for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) ids.push(i * 8 + j * 4 + k);
  return new Mesh(
    new DeviceList(ids),
    [4, 2, 2],
    ["a", "b", "c"],
    [AxisType.Explicit, AxisType.Auto, AxisType.Auto],
  );
}

const mesh2x4 = () => new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);

/**
 * The value cases (colocated.v1.2), as the trees they encode; test/value.test.ts decodes each
 * back to its tree.
 */
export const VALUE_TREES: Record<string, () => unknown> = {
  // A Mesh on its own, as JAX's colocated serialization is handed one.
  value_mesh_1_2: () => mesh2x4(),
  // A list of shardings: the mesh and its devices are written once, and the third sharding (a
  // fresh object equal to the first) is the first's entry.
  value_shardings_1_2: () => {
    const mesh = mesh2x4();
    return [
      new NamedSharding(mesh, new P("x")),
      new NamedSharding(mesh, new P("y")),
      new NamedSharding(mesh, new P("x")),
      new SingleDeviceSharding(0, { memoryKind: "pinned_host" }),
    ];
  },
  // Dtypes (a key dtype with its key type), a PRNG impl, a key array's spec, and a device
  // list under a dict.
  value_dtypes_1_2: () => {
    const fry = { impl: "threefry2x32", keyShape: [2] };
    const sharding = new NamedSharding(mesh2x4(), new P("x"));
    return tuple(
      new DTypeValue("float32"),
      new DTypeValue("bfloat16"),
      new DTypeValue("key", fry),
      new PRNGImpl("threefry2x32", [2]),
      new ShapeDtypeStruct([4], "key", sharding, { keyType: fry }),
      { a: new DeviceList([3, 1]), b: null },
    );
  },
  // JAX's function-and-specialization tuple before its specs are known.
  value_function_1_2: () =>
    tuple(new FunctionRef("vector_cases", "add_one"), null, null, null, null, null),
};

export const VECTOR_CASES: VectorCase[] = [
  {
    name: "mesh_3d_transposed",
    bytes: () => {
      const mesh = mesh3dTransposed();
      return specs([
        f32([8, 4, 2], new NamedSharding(mesh, new P("a", "b", "c"))),
        f32([8], new NamedSharding(mesh, new P(["b", "c"]))),
      ]);
    },
  },
  {
    name: "partition_specs",
    bytes: () => {
      const { Auto, Explicit } = AxisType;
      const mesh = new Mesh(
        new DeviceList(range(16)),
        [2, 2, 2, 2],
        ["a", "b", "c", "d"],
        [Auto, Explicit, Explicit, Explicit],
      );
      return specs({
        tuple_unconstrained: f32(
          [4, 4, 4, 4],
          new NamedSharding(
            mesh,
            P.create([["a", "b"], null, UNCONSTRAINED, "c"], { unreduced: ["d"] }),
          ),
        ),
        reduced: f32([4], new NamedSharding(mesh, P.create(["a"], { reduced: ["c", "b"] }))),
        empty: f32([2, 2], new NamedSharding(mesh, new P())),
        none: f32([2, 2], new NamedSharding(mesh, new P(null))),
      });
    },
  },
  {
    name: "memory_kinds",
    bytes: () => {
      const mesh = mesh2x4();
      return specs([
        f32([8], new NamedSharding(mesh, new P("x"), { memoryKind: "pinned_host" })),
        f32([8], new NamedSharding(mesh, new P("x"), { memoryKind: "unpinned_host" })),
        f32([8], new NamedSharding(mesh, new P("x"), { memoryKind: "device" })),
        f32([2], new SingleDeviceSharding(3, { memoryKind: "pinned_host" })),
      ]);
    },
  },
  {
    name: "dtypes",
    bytes: () =>
      specs(
        DTYPE_NAMES.filter((dtype) => dtypeSince(dtype) === 0).map(
          (dtype) => new ShapeDtypeStruct([2, 3], dtype),
        ),
      ),
  },
  {
    // colocated.v1.1: every dtype that 1.1 adds, but key (key_arrays_1_1 has those).
    name: "dtypes_1_1",
    bytes: () =>
      specs(
        DTYPE_NAMES.filter((dtype) => dtypeSince(dtype) === 1 && dtype !== "key").map(
          (dtype) => new ShapeDtypeStruct([2, 3], dtype),
        ),
        V1_1,
      ),
  },
  {
    // colocated.v1.1: PRNG key arrays of JAX's three impls and a custom one, by name.
    name: "key_arrays_1_1",
    bytes: () => {
      const key = (shape: number[], impl: string, keyShape: number[], sharding?: NamedSharding) =>
        new ShapeDtypeStruct(shape, "key", sharding, { keyType: { impl, keyShape } });
      return specs(
        {
          fry: key([], "threefry2x32", [2]),
          rbg: key([3], "rbg", [4]),
          urbg: key([2, 2], "unsafe_rbg", [4]),
          custom: key([5], "custom_prng", [3]),
          sharded: key([8], "threefry2x32", [2], new NamedSharding(mesh2x4(), new P("x"))),
          float: f32([2]),
        },
        V1_1,
      );
    },
  },
  {
    name: "weak_types",
    bytes: () =>
      specs([
        new ShapeDtypeStruct([], "float32", null, { weakType: true }),
        new ShapeDtypeStruct([3], "int32", null, { weakType: true }),
        new ShapeDtypeStruct([3], "int32"),
      ]),
  },
  {
    name: "trees",
    bytes: () => {
      const leaf = (n: number) => f32([n]);
      return specs({
        a: null,
        b: tuple(leaf(1), [leaf(2), null]),
        c: new NamedTuple("vector_cases.Point", ["x", "y"], [leaf(3), tuple(leaf(4))]),
        d: { nested: [leaf(5)] },
        e: tuple(),
        f: [],
      });
    },
  },
  {
    // colocated.v1.1: dicts with int, bool and None keys, OrderedDict and defaultdict nodes.
    name: "trees_1_1",
    bytes: () => {
      const leaf = (n: number) => f32([n]);
      return specs(
        {
          ints: new Map<unknown, unknown>([
            [1, leaf(1)],
            [-5, leaf(2)],
            [0, [leaf(3)]],
          ]),
          bools: new Map([
            [true, leaf(4)],
            [false, null],
          ]),
          mixed: new Map<unknown, unknown>([
            [true, leaf(5)],
            [0, leaf(6)],
          ]),
          none: new Map([[null, leaf(7)]]),
          big: new Map([[-(2n ** 63n), leaf(8)]]),
          ordered: new OrderedDict([
            ["b", leaf(9)],
            [2n, leaf(10)],
            ["a", new OrderedDict([])],
            [null, leaf(11)],
            [false, leaf(12)],
          ]),
          default: new DefaultDict("builtins.list", [
            ["y", leaf(13)],
            ["x", new DefaultDict(null, [[3n, leaf(14)]])],
          ]),
          empty: new DefaultDict("builtins.list", []),
          strs: { a: leaf(15), 1: leaf(16) },
        },
        V1_1,
      );
    },
  },
  {
    // colocated.v1.1: float, bytes and tuple dict keys (nested, with None, bool and bytes
    // items), sorted as JAX sorts them; a tuple's items join the key pool before it.
    name: "dict_keys_1_1",
    bytes: () => {
      const leaf = (n: number) => f32([n]);
      const bytes = (...b: number[]) => new Uint8Array(b);
      return specs(
        {
          floats: new Map<unknown, unknown>([
            [1.5, leaf(1)],
            [-2.25, leaf(2)],
            [Number.POSITIVE_INFINITY, leaf(3)],
            [1e-7, leaf(4)],
          ]),
          numbers: new Map<unknown, unknown>([
            [0.5, leaf(5)],
            [1, leaf(6)],
            [3, leaf(7)],
            [2.5, [leaf(8)]],
          ]),
          bytes: new Map<unknown, unknown>([
            [bytes(), leaf(9)],
            [bytes(0x61, 0), leaf(10)],
            [bytes(0xff), leaf(11)],
          ]),
          tuples: new Map<unknown, unknown>([
            [[], leaf(12)],
            [[1, "a"], leaf(13)],
            [[1, "b"], leaf(14)],
            [[2.5], leaf(15)],
          ]),
          nested: new Map<unknown, unknown>([
            [[[0], bytes(0x7a)], leaf(16)],
            [[[1, [null, true]], "q"], leaf(17)],
          ]),
          same: new Map<unknown, unknown>([[[1, "a"], leaf(18)]]),
        },
        V1_1,
      );
    },
  },
  {
    // colocated.v1.1: layers repeated by value (a fresh NamedSharding per leaf), written once
    // and repeated; runs of leaves; an optimizer-like "mu" whose last layer differs.
    name: "shared_subtrees_1_1",
    bytes: () => {
      const mesh = mesh2x4();
      const sxy = () => new NamedSharding(mesh, new P("x", "y"));
      const sx = () => new NamedSharding(mesh, new P("x"));
      const layer = () => ({
        attn: { k: f32([8, 4], sxy()), q: f32([8, 4], sxy()) },
        mlp: [f32([8], sx()), f32([8], sx()), null],
        norm: tuple(f32([8])),
      });
      return specs(
        {
          emb: f32([8, 4], sxy()),
          layers: [layer(), layer(), layer()],
          mu: [layer(), layer(), { attn: f32([2]) }],
          step: tuple(f32([]), f32([]), f32([])),
        },
        V1_1,
      );
    },
  },
  {
    // colocated.v1.1: str keys front-coded (a shared prefix that splits a UTF-8 character,
    // the empty key), int keys after them in the pool, and fresh dict keys.
    name: "key_pool_1_1",
    bytes: () =>
      specs(
        {
          "": f32([1]),
          decoder_block_0: f32([1]),
          decoder_block_1: f32([2]),
          decoder_norm: { x: f32([3]) },
          ints: new Map([
            [1, f32([4])],
            [2, f32([5])],
          ]),
          é_unicode: f32([6]),
          ünicode: [f32([7]), f32([7])],
        },
        V1_1,
      ),
  },
  {
    // An OrderedDict and a defaultdict without a factory at a 1.0 target: the custom nodes
    // (aux data as JSON) that 1.0 wrote for them.
    name: "ordered_dicts_1_0",
    bytes: () => {
      const leaf = (n: number) => f32([n]);
      return specs([
        new OrderedDict([
          ["b", leaf(1)],
          [2n, leaf(2)],
          [null, leaf(3)],
          [true, leaf(4)],
          ['q"\\\n\u00e9', leaf(5)],
        ]),
        new DefaultDict(null, [
          ["y", leaf(6)],
          ["x", leaf(7)],
        ]),
      ]);
    },
  },
  {
    name: "single_device",
    bytes: () => {
      const on = (id: number) =>
        new ShapeDtypeStruct([4], "bfloat16", new SingleDeviceSharding(id));
      return specs([on(0), on(5), on(0)]);
    },
  },
  {
    name: "gspmd",
    bytes: () => {
      const devices = new DeviceList(range(8, 8));
      return specs([
        f32(
          [8, 8],
          new GSPMDSharding(devices, {
            type: "other",
            tileDims: [2, 2, 2],
            tileDevices: [0, 2, 4, 6, 1, 3, 5, 7],
            replicateOnLastTileDim: true,
          }),
        ),
        f32(
          [8, 8],
          new GSPMDSharding(devices, {
            type: "other",
            tileDims: [4, 2],
            tileDevices: [3, 1, 0, 2, 7, 5, 6, 4],
          }),
        ),
        f32([8], new GSPMDSharding(devices, { type: "replicated" })),
        f32([8], new GSPMDSharding(devices, { type: "maximal", tileDims: [], tileDevices: [3] })),
      ]);
    },
  },
  {
    name: "program_by_name",
    bytes: () => {
      const mesh = mesh2x4();
      const inputs = treeFlatten<ShapeDtypeStruct>([
        f32([8, 4], new NamedSharding(mesh, new P("x", "y"))),
        f32([8], new NamedSharding(mesh, new P("x"))),
      ]);
      const outputs = treeFlatten<ShapeDtypeStruct>({
        out: f32([8, 4], new NamedSharding(mesh, new P("x", "y"))),
      });
      const program: Program = {
        function: new FunctionRef("vector_cases", "double"),
        inputs,
        outputs,
        devices: mesh.devices,
      };
      return encodeProgram(program, V1_0);
    },
  },
  {
    name: "example_program",
    bytes: () => encodeProgram(exampleProgram(), V1_0),
  },
  {
    name: "newer_minor_version",
    bytes: () => {
      // What a minor version 4 peer might write: new fields at every level and a new entry kind.
      const message = SpecsPayload.decode(VECTOR_CASES[2].bytes());
      message.header!.minorVersion = 4;
      message._unknownFields = { [20 * 8 + 2]: [new Uint8Array([3, 1, 2, 3])] };
      message.header!._unknownFields = { [9 * 8]: [new Uint8Array([1])] };
      message.specs!.treedef!._unknownFields = { [12 * 8 + 2]: [new Uint8Array([2, 104, 105])] };
      const entries = message.table!.entries;
      const mesh = entries[1].kind;
      if (mesh?.$case === "mesh") mesh.value._unknownFields = { [11 * 8]: [new Uint8Array([7])] };
      entries.push({
        kind: undefined,
        _unknownFields: { [30 * 8 + 2]: [new Uint8Array([2, 8, 1])] },
      });
      return SpecsPayload.encode(message).finish();
    },
  },
  ...Object.entries(VALUE_TREES).map(([name, tree]) => ({ name, bytes: () => value(tree()) })),
  {
    // colocated.v1.3: the str key pool as a trie of key parts. Dotted and slashed keys whose
    // layers and optimizer moments repeat (written once, as repeats), a key that ends where
    // others go on ("opt_state/"), the empty key, a "-" sibling of a "." label, and UTF-8
    // labels.
    name: "key_trie_1_3",
    bytes: () => {
      const tree: Record<string, ShapeDtypeStruct> = { "": f32([1]), "opt_state/": f32([1]) };
      for (const prefix of ["opt_state/mu/", "opt_state/nu/", "params."]) {
        for (const i of range(3)) {
          tree[`${prefix}layers.${i}.attn.b`] = f32([4]);
          tree[`${prefix}layers.${i}.attn.w`] = f32([4, 4]);
          tree[`${prefix}layers.${i}.mlp.w`] = f32([4, 8]);
        }
      }
      tree["params.layers-count"] = f32([1]);
      tree["params.héad/β"] = f32([2]);
      return specs(tree, { targetMinorVersion: 3 });
    },
  },
  {
    // 1.3: leaf copies. A cycle of five specs six times (one copy that overlaps what it makes),
    // then a leaf, a run of four from far back (a copy of its own), and a last leaf.
    name: "leaf_copies_1_3",
    bytes: () => {
      const cycle = range(5).map((i) => f32([i + 1]));
      const tail = [f32([8]), ...cycle.slice(0, 4), f32([9])];
      return specs({ cycle: range(6).flatMap(() => cycle), tail }, { targetMinorVersion: 3 });
    },
  },
  {
    // 1.3: the header names its writer, here a Python one with every part it can say.
    name: "writer_python_1_3",
    bytes: () => {
      const mesh = mesh2x4();
      return specs([f32([8, 4], new NamedSharding(mesh, new P("x", "y")))], {
        writer: PYTHON_WRITER,
      });
    },
  },
  {
    // 1.3: a TypeScript writer names its library, version and language only.
    name: "writer_typescript_1_3",
    bytes: () => {
      const program: Program = {
        function: new FunctionRef("vector_cases", "double"),
        inputs: treeFlatten<ShapeDtypeStruct>([f32([8], new SingleDeviceSharding(0))]),
        devices: new DeviceList([0]),
      };
      const writer: Writer = {
        library: "colocated-wire",
        version: "0.1.0",
        language: "typescript",
      };
      return encodeProgram(program, { writer });
    },
  },
];
