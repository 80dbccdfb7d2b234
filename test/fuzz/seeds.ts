import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  CustomNode,
  DeviceList,
  DTYPE_NAMES,
  encodeProgram,
  encodeSpecs,
  FunctionRef,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec,
  PickledFunction,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  tuple,
  UNCONSTRAINED,
} from "../../src";
import { dtypeSince } from "../../src/entries/array-spec";
import { specs } from "../corpus-builders";
import { fourShardedLeaves, PYTHON_WRITER, range } from "../fixtures";

/** A valid payload the fuzzer starts from. */
export interface Seed {
  name: string;
  /** Picked by the name's start: "program" and "value" seeds are read as such, the rest as specs. */
  decoder: "specs" | "program" | "value";
  bytes: Uint8Array;
}

/** Where the seeds live, so Python mutates the very same bytes. */
export const SEED_DIR = join(__dirname, "seeds");

const NEWER_DIR = join(__dirname, "..", "corpus", "newer");

const V1_0 = { targetMinorVersion: 0 };

function specsOf(tree: unknown): Uint8Array {
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return encodeSpecs(treedef, leaves, V1_0);
}

/** Every node kind, every dtype, weak types and scalars. */
function trees(): Uint8Array {
  // The seeds are colocated.v1.0 payloads: its dtypes only.
  const dtypes = DTYPE_NAMES.filter((d) => dtypeSince(d) === 0).map(
    (d, i) => new ShapeDtypeStruct(i % 3 ? [i, 2] : [], d, null, { weakType: i % 2 === 0 }),
  );
  // Python knows "fuzzing.Node" (python/tests/fuzzing.py), a dataclass with one meta field.
  const node = new CustomNode("fuzzing.Node", new TextEncoder().encode('j["tag"]'), [
    dtypes[0],
    null,
  ]);
  const point = new NamedTuple("collections.Point", ["x", "y"], [dtypes[1], [dtypes[2], {}]]);
  return specsOf({ all: dtypes, nested: tuple(node, point, null, [tuple()]), é: { b: dtypes[3] } });
}

/** Transposed and irregular device orders, every spec form and memory kind, GSPMD forms. */
function meshes(): Uint8Array {
  const order = [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15];
  const cube = new Mesh(
    new DeviceList(order),
    [2, 2, 4],
    ["e", "a", "m"],
    ["Explicit", "Auto", "Manual"],
  );
  const odd = new Mesh(new DeviceList([9, 3, 700, 41]), [4], ["x"]);
  const on = (mesh: Mesh, spec: PartitionSpec, memoryKind?: string) =>
    new NamedSharding(mesh, spec, { memoryKind });
  const devices = new DeviceList(range(8, 32));
  const gspmd = [
    new GSPMDSharding(devices, { type: "replicated" }),
    new GSPMDSharding(devices, { type: "maximal", tileDims: [], tileDevices: [5] }),
    new GSPMDSharding(devices, {
      type: "other",
      tileDims: [2, 2, 2],
      tileDevices: [0, 2, 4, 6, 1, 3, 5, 7],
      replicateOnLastTileDim: true,
    }),
  ];
  const shardings = [
    on(cube, new PartitionSpec(["a", "m"], UNCONSTRAINED, null)),
    on(cube, PartitionSpec.create(["m"], { unreduced: ["e"] }), "pinned_host"),
    on(odd, new PartitionSpec("x"), "unpinned_host"),
    new SingleDeviceSharding(900, { memoryKind: "pinned_host" }),
    ...gspmd,
  ];
  return specsOf(shardings.map((s, i) => new ShapeDtypeStruct([8, 8, i + 1], "float32", s)));
}

/**
 * 1.3: str keys written as a key trie. Keys as the key_trie_1_3 vector has them (layers and
 * optimizer moments repeated, a key that ends where others go on, the empty key, UTF-8 labels),
 * beside an S7-like flat dict of a model's parameters and Adam moments keyed by dotted paths.
 */
function keyTrie(): Uint8Array {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["fsdp", "tensor"]);
  const sharded = new ShapeDtypeStruct(
    [8, 4],
    "bfloat16",
    new NamedSharding(mesh, new PartitionSpec("fsdp", "tensor")),
  );
  const small = new ShapeDtypeStruct([4], "float32");
  const vector: Record<string, ShapeDtypeStruct> = { "": small, "opt_state/": small };
  for (const prefix of ["opt_state/mu/", "opt_state/nu/", "params."]) {
    for (const i of range(3)) {
      vector[`${prefix}layers.${i}.attn.b`] = small;
      vector[`${prefix}layers.${i}.attn.w`] = sharded;
    }
  }
  vector["params.layers-count"] = small;
  vector["params.héad/β"] = small;
  const flat: Record<string, ShapeDtypeStruct> = {};
  for (const prefix of ["params", "opt_state.mu", "opt_state.nu"]) {
    flat[`${prefix}.model.embed_tokens.weight`] = sharded;
    for (const i of range(2)) {
      for (const p of ["q_proj", "k_proj", "o_proj"])
        flat[`${prefix}.model.layers.${i}.self_attn.${p}.weight`] = sharded;
      flat[`${prefix}.model.layers.${i}.input_layernorm.weight`] = small;
    }
    flat[`${prefix}.lm_head.weight`] = sharded;
  }
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>({ flat, vector });
  return encodeSpecs(treedef, leaves);
}

/**
 * 1.3: leaf copies. A list of 64 leaves cycling 4 shardings (written as 4 leaves and one copy
 * that overlaps what it makes), after blocks that repeat one another (1.1 REPEATs, whose leaves
 * the leaf list leaves out) and a first cycle the later one may copy from across them.
 */
function leafCopies(): Uint8Array {
  const cycled = fourShardedLeaves([8, 8], "bfloat16");
  const cycle = (n: number) => range(n).map((i) => cycled[i % cycled.length]);
  const block = {
    attn: { b: new ShapeDtypeStruct([8], "float32"), w: cycled[0] },
    mlp: [cycled[1], cycled[2], new ShapeDtypeStruct([8], "float32")],
  };
  const tree = { a: cycle(12), blocks: range(4).map(() => block), cycle: cycle(64) };
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return encodeSpecs(treedef, leaves);
}

function programs(): Record<string, Uint8Array> {
  const devices = new DeviceList(range(8));
  const mesh = new Mesh(devices, [4, 2], ["x", "y"]);
  const sharding = new NamedSharding(mesh, new PartitionSpec("x", "y"));
  const inputs = treeFlatten<ShapeDtypeStruct>({
    w: new ShapeDtypeStruct([8, 4], "bfloat16", sharding),
  });
  const outputs = treeFlatten<ShapeDtypeStruct>([new ShapeDtypeStruct([], "float32")]);
  // Arbitrary bytes: a pickle is never loaded while decoding.
  const pickled = new PickledFunction(new Uint8Array([0x80, 5, 0x95, 3, 0, 0, 0, 0x4e, 0x2e]), [
    mesh,
    sharding,
  ]);
  return {
    "program-by-name": encodeProgram(
      {
        function: new FunctionRef("json", "dumps"),
        inputs,
        outputs,
        devices,
      },
      V1_0,
    ),
    "program-pickled": encodeProgram({ function: pickled, inputs, devices }, V1_0),
    // 1.3: its header names the Python writer of its pickle.
    "program-pickled-writer": encodeProgram(
      { function: pickled, inputs, devices },
      { writer: PYTHON_WRITER },
    ),
  };
}

/** The seeds, built here: what `npm run fuzz` and the tests mutate. */
export function buildSeeds(): Record<string, Uint8Array> {
  return {
    "specs-base": specs().bytes(),
    "specs-trees": trees(),
    "specs-meshes": meshes(),
    "specs-key-trie": keyTrie(),
    "specs-leaf-copies": leafCopies(),
    ...programs(),
  };
}

/** The committed seeds, plus the newer-version payloads of test/corpus/newer. */
export function loadSeeds(): Seed[] {
  const from = (dir: string) =>
    readdirSync(dir)
      .filter((f) => f.endsWith(".bin"))
      .sort()
      .map((f) => {
        const name = f.replace(/\.bin$/, "");
        const decoder = (["program", "value"] as const).find((d) => name.startsWith(d)) ?? "specs";
        return { name, decoder, bytes: new Uint8Array(readFileSync(join(dir, f))) } as Seed;
      });
  return [...from(SEED_DIR), ...from(NEWER_DIR)];
}
