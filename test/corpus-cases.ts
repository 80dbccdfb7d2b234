/**
 * The bad-payload corpus, described readably: each case breaks one thing of a valid payload
 * and names the DecodeError (path and code) both languages must raise. corpus.test.ts writes
 * the files of test/corpus/bad/ from these (UPDATE_CORPUS=1) and checks the committed ones;
 * python/tests/test_corpus.py reads the same files.
 */
import { DType, Entry } from "../gen/ts/colocated/v1/table";
import { TreeDef } from "../gen/ts/colocated/v1/tree";
import type { DecodeErrorCode, DecodeLimits } from "../src";
import { frontCode } from "../src/entries/front-code";
import {
  type Edit,
  nested,
  type Payload,
  patched,
  program,
  raw,
  specs,
  tree,
} from "./corpus-builders";
import { range } from "./fixtures";

/** What a case needs besides its bytes to fail, and what its message must say. */
export interface CaseOptions {
  /** Limits below the defaults (Python takes them by their snake_case names). */
  limits?: Partial<DecodeLimits>;
  /** The newest minor version the decoder accepts, as a negotiated RPC version sets it. */
  maxMinorVersion?: number;
  /**
   * A regular expression the error's message must match, in JavaScript and Python alike;
   * where the two languages word it differently, it names what both must say.
   */
  message?: string;
}

/** One bad payload and the error it must produce. */
export interface CorpusCase extends Payload, CaseOptions {
  /** The file name, without extension: `<code>--<what>`. */
  name: string;
  path: string;
  code: DecodeErrorCode;
}

type Row = [what: string, path: string, payload: Payload, options?: CaseOptions];

const T7 = "table[7].gspmd_sharding";
const HEADER = [0x0a, 4, 0x08, 1, 0x18, 1]; // major 1, kind specs
const SPEC = "table[2].named_sharding.spec";
const plain = (ids: number[]) => ({ $case: "plain", value: { ids } });
const iota = (reshapeDims: number[], transposePerm: number[]) => ({ reshapeDims, transposePerm });
const unknownKindEntry = Entry.decode(new Uint8Array([0xfa, 0x01, 0x00])); // field 31, empty
const arraySpecEntry = { kind: { $case: "arraySpec", value: { shape: [], dtype: 1 } } };
const pickled = (refs: number[]) => ({
  $case: "pickled",
  value: { pickle: new Uint8Array([0x80, 5, 0x4e, 0x2e]), refs }, // pickle of None
});
/** A Python writer (1.3), as its header names it. */
const PYTHON_WRITER = {
  library: "colocated-wire",
  version: "0.1.0",
  language: 2,
  python: "3.12",
  jax: "0.10.2",
  cloudpickle: "",
};
const UNKNOWN_FIELD = [0xf8, 0x07, 0x00]; // field 127, varint 0
// colocated.v1.1 constructs on entry 3 (an ArraySpec) of the base payload, which is 1.0.
const V1_1 = { "m.header.minorVersion": 1 };
const FRY = { impl: "threefry2x32", keyShape: [2n] };
const KEY = { "e.3.dtype": DType.D_TYPE_KEY, "e.3.keyType": FRY };
// colocated.v1.1 trees: node kinds DICT 5, ORDERED_DICT 8, DEFAULT_DICT 9 over leaves (1), and
// dict keys that are not str, which dict_keys name after `strings`.
const int = (value: bigint) => ({ key: { $case: "int", value } });
/** No pickle (NodeType.pickle, 1.1): the field every node type message has. */
const NO_PICKLE = new Uint8Array(0);
const LIST_FACTORY = { name: "builtins.list", fields: [], pickle: NO_PICKLE };
const dict = (kind: number, keys: unknown[], strings: string[] = [], more = {}) =>
  tree(
    {
      kinds: [kind, ...keys.map(() => 1)],
      arities: [keys.length],
      strings,
      dictKeys: keys.map((_, i) => i),
      keys: keys.slice(strings.length),
      ...more,
    },
    keys.length,
  );
const DEFAULT = { typeRefs: [0], nodeTypes: [LIST_FACTORY] };
// colocated.v1.1 dict keys: a float, bytes, and a tuple whose items are pool refs.
const float = (value: number) => ({ key: { $case: "float", value } });
const bytesKey = (...b: number[]) => ({ key: { $case: "bytes", value: new Uint8Array(b) } });
const tuple = (...items: number[]) => ({ key: { $case: "tuple", value: { items } } });
/** A dict of one leaf whose key is pool key `used` of `keys` (none a str). */
const poolDict = (keys: unknown[], used: number) =>
  tree({ kinds: [5, 1], arities: [1], dictKeys: [used], keys }, 1);
/** `n` tuple keys after int 1, each holding the one before it `width` times. */
const tupleChain = (n: number, width: number) => [
  int(1n),
  ...range(n).map((i) => tuple(...Array(width).fill(i))),
];
// colocated.v1.1 tree constructs: LEAVES (10) runs, REPEAT (11) copies of an earlier subtree
// (over LIST 4, LEAF 1, NONE 2), and str keys front-coded in key_text and key_sizes.
const LEAVES = 10;
const REPEAT = 11;
const utf8 = (text: string) => new TextEncoder().encode(text);
/** A dict of `n` leaves whose keys are pool keys 0..n-1, the pool front-coded. */
const codedDict = (keyText: Uint8Array, keySizes: number[], n: number, more = {}) =>
  tree(
    {
      kinds: [5, ...Array(n).fill(1)],
      arities: [n],
      dictKeys: range(n),
      keyText,
      keySizes,
      ...more,
    },
    n,
  );
// colocated.v1.3: the str key pool as a trie of key parts (TreeDef.key_trie). A written node's
// form is 4 * children + 2 * (1 when a key ends at it); a repeat's is 2 * s + 1, taking the key
// end and children of node s.
const V1_3 = { "m.header.minorVersion": 3 };
const written = (children: number, keyEnds: 0 | 1) => 4 * children + 2 * keyEnds;
const repeatOf = (node: number) => 2 * node + 1;
/** A KeyTrie of these labels, front-coded (or their label_text and label_sizes as given). */
const keyTrie = (
  labels: string[] | { labelText: Uint8Array; labelSizes: number[] },
  nodes: number[],
) => {
  if (!Array.isArray(labels)) return { ...labels, nodes };
  const { keyText, keySizes } = frontCode(labels);
  return { labelText: keyText, labelSizes: keySizes, nodes };
};
/** Labels "a.", "b", "c": node 0 "a." with children "b" and "c", the keys "a.b" and "a.c". */
const TRIE_LABELS = ["a.", "b", "c"];
const TRIE_NODES = [0, written(2, 0), 1, written(0, 1), 2, written(0, 1)];
/** The same labels as label_text "a.bc" and its sizes, for a case to break. */
const TRIE_TEXT = utf8("a.bc");
const TRIE_SIZES = [0, 2, 0, 1, 0, 1];
/** A dict of `n` leaves whose keys are pool keys 0..n-1, the pool a key trie (1.3). */
const trieDict = (trie: ReturnType<typeof keyTrie>, n: number, more = {}) =>
  tree(
    { kinds: [5, ...Array(n).fill(1)], arities: [n], dictKeys: range(n), keyTrie: trie, ...more },
    n,
  );
/** A dict of `n` leaves taking the trie's keys in order (fresh_dict_keys). */
const freshTrieDict = (trie: ReturnType<typeof keyTrie>, n: number) =>
  tree({ kinds: [5, ...Array(n).fill(1)], arities: [n], freshDictKeys: true, keyTrie: trie }, n);
/**
 * A key trie bomb in a few hundred bytes: `levels` nodes at the root, each with two children
 * that repeat the one before, so the keys double at each level (2^(levels + 1) - 2 in all).
 */
function keyTrieBomb(levels: number) {
  const nodes = [0, written(2, 0), 1, written(0, 1), 2, written(0, 1)];
  for (let k = 1; k < levels; k++) {
    const previous = 3 * (k - 1);
    nodes.push(0, written(2, 0), 1, repeatOf(previous), 2, repeatOf(previous));
  }
  return keyTrie(["x.", "a.", "b."], nodes);
}

// colocated.v1.3: leaf copies (Specs.leaf_copies), three numbers per copy: the written leaves
// before it (after the copy before), how many leaves back it starts, how many leaves it makes.
// The base's ArraySpecs are entries 3, 5 and 8.
/** A list of `n` leaves written as `leaves` and the copies `leafCopies`. */
const copiedList = (n: number, leaves: number[], leafCopies: number[]): Edit => ({
  ...tree({ kinds: [4, ...Array(n).fill(1)], arities: [n] }, n),
  "m.specs.leaves": leaves,
  "m.specs.leafCopies": leafCopies,
});
/**
 * [[a, b, c, d], REPEAT of it, e, f, g, h]: 12 leaves, of which the REPEAT's 4 are not written,
 * so the leaf list (and its copies) makes 8: the copy that makes e..h sits after the REPEAT.
 */
const copiedAfterRepeat = (leaves: number[], leafCopies: number[]): Edit => ({
  ...tree({ kinds: [4, 4, 1, 1, 1, 1, REPEAT, 1, 1, 1, 1], arities: [6, 4, 1] }, 8),
  "m.specs.leaves": leaves,
  "m.specs.leafCopies": leafCopies,
});
/** A program's output specs (entry 3 is its ArraySpec): a list of `n` leaves, copies and all. */
const copiedOutputs = (n: number, leaves: number[], leafCopies: number[]): Edit => ({
  "m.outputSpecs": {
    treedef: TreeDef.fromPartial({ kinds: [4, ...Array(n).fill(1)], arities: [n] }),
    leaves,
    leafCopies,
  },
});

/**
 * A REPEAT bomb in a few hundred bytes: a list of two leaves, then `levels` lists each of two
 * REPEATs of the one before, nested so that each is complete before the next refers to it.
 */
function repeatBomb(levels: number) {
  const kinds = [4, 4, LEAVES];
  const arities = [2, 2, 2];
  let previous = 1;
  for (let k = 0; k < levels; k++) {
    kinds.push(4, 4, REPEAT, REPEAT);
    arities.push(2, 2, previous, previous);
    previous = kinds.length - 3;
  }
  return tree({ kinds: [...kinds, 2], arities }, 2);
}

const ROWS: Record<DecodeErrorCode, Row[]> = {
  malformed: [
    ["not-protobuf", "payload", raw("specs", Array(11).fill(0xff))],
    ["field-number-0", "payload", raw("specs", [...HEADER, 0x00, 0x00])],
    ["stray-end-group", "payload", raw("specs", [...HEADER, 0x0c])],
    ["group-ends-with-another-field", "payload", raw("specs", [...HEADER, 0xa3, 0x01, 0xac, 0x01])],
    ["header-twice", "payload", raw("specs", [...HEADER, ...HEADER])],
    ["entry-runs-past-its-table", "payload", raw("specs", [...HEADER, 0x12, 2, 0x0a, 9, 0, 0])],
    ["packed-varint-cut-off", "payload", raw("specs", [...HEADER, 0x1a, 4, 0x12, 2, 1, 0x81])],
    [
      "mesh-device-list-twice",
      "payload",
      raw("specs", [...HEADER, 0x12, 8, 0x0a, 6, 0x12, 4, 8, 0, 8, 0]),
    ],
    [
      "tag-of-six-bytes",
      "payload",
      raw("specs", [...HEADER, 0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0]),
    ],
    ["truncated", "payload", { ...specs(), bytes: () => specs().bytes().subarray(0, 40) }],
    ["length-past-the-end", "payload", raw("specs", [10, 4, 8, 1, 24, 1, 0x12, 0x40, 10])],
    [
      "axis-name-not-utf8",
      "payload",
      patched(specs({ "e.1.axisNames.1": "Q" }), [0x1a, 1, 0x51], [0x1a, 1, 0xff]),
    ],
  ],
  "unsupported-version": [
    [
      "leaves-of-1.1-under-a-1.0-header",
      "specs.treedef.kinds[1]",
      specs(tree({ kinds: [4, LEAVES], arities: [2, 2] }, 2)),
      { message: "leaves needs colocated\\.v1\\.1" },
    ],
    [
      "repeat-of-1.1-under-a-1.0-header",
      "specs.treedef.kinds[3]",
      specs(tree({ kinds: [4, 4, 1, REPEAT], arities: [2, 1, 1] }, 1)),
      { message: "repeat needs colocated\\.v1\\.1" },
    ],
    [
      "key-text-of-1.1-under-a-1.0-header",
      "specs.treedef.key_text",
      specs(codedDict(utf8("a"), [0, 1], 1)),
      { message: "key_text needs colocated\\.v1\\.1" },
    ],
    [
      "key-trie-of-1.3-under-a-1.2-header",
      "specs.treedef.key_trie",
      specs({ "m.header.minorVersion": 2 }, trieDict(keyTrie(TRIE_LABELS, TRIE_NODES), 2)),
      { message: "key_trie needs colocated\\.v1\\.3" },
    ],
    [
      "leaf-copies-of-1.3-under-a-1.2-header",
      "specs.leaf_copies",
      specs({ "m.header.minorVersion": 2 }, copiedList(8, [3, 5], [2, 2, 6])),
      { message: "leaf copies needs colocated\\.v1\\.3; the header says 1\\.2" },
    ],
    [
      "fresh-dict-keys-of-1.1-under-a-1.0-header",
      "specs.treedef.fresh_dict_keys",
      specs(dict(5, ["a"], ["a"], { dictKeys: [], freshDictKeys: true })),
      { message: "fresh_dict_keys needs colocated\\.v1\\.1" },
    ],
    [
      "writer-of-1.3-under-a-1.0-header",
      "header.writer",
      specs({ "m.header.writer": PYTHON_WRITER }),
      { message: "a writer needs colocated\\.v1\\.3" },
    ],
    ["empty", "header", raw("specs", [])],
    ["no-header", "header", specs({ "m.header": undefined })],
    [
      "major-version-2",
      "header.major_version",
      specs({ "m.header.majorVersion": 2 }),
      { message: "major version 2; this (decoder|reader) reads 1" },
    ],
    [
      "dtype-of-1.1-under-a-1.0-header",
      "table[3].array_spec.dtype",
      specs({ "e.3.dtype": DType.D_TYPE_FLOAT0 }),
      { message: "float0 needs colocated\\.v1\\.1" },
    ],
    [
      "key-type-of-1.1-under-a-1.0-header",
      "table[3].array_spec.key_type",
      specs({ "e.3.keyType": FRY }),
      { message: "key_type needs colocated\\.v1\\.1" },
    ],
    [
      "payload-of-1.1-above-the-agreed-1.0",
      "header.minor_version",
      specs(V1_1, KEY),
      { maxMinorVersion: 0, message: "minor version 1 is newer than the agreed 0" },
    ],
    [
      "ordered-dict-of-1.1-under-a-1.0-header",
      "specs.treedef.kinds[0]",
      specs(dict(8, ["a"], ["a"])),
      { message: "ordered_dict needs colocated\\.v1\\.1" },
    ],
    [
      "default-dict-of-1.1-under-a-1.0-header",
      "specs.treedef.kinds[0]",
      specs(dict(9, ["a"], ["a"], DEFAULT)),
      { message: "default_dict needs colocated\\.v1\\.1" },
    ],
    [
      "int-dict-key-of-1.1-under-a-1.0-header",
      "specs.treedef.dict_keys[0]",
      specs(dict(5, [int(1n)])),
      { message: "needs colocated\\.v1\\.1" },
    ],
    [
      "float-dict-key-of-1.1-under-a-1.0-header",
      "specs.treedef.dict_keys[0]",
      specs(dict(5, [float(1.5)])),
      { message: "needs colocated\\.v1\\.1" },
    ],
    [
      "unknown-node-kind-under-a-newer-header",
      "specs.treedef.kinds[0]",
      specs({ "m.header.minorVersion": 7 }, tree({ kinds: [12] }, 0)),
      { message: "node kind 12 needs colocated\\.v1\\.7" },
    ],
    [
      "unknown-dtype-under-a-newer-header",
      "table[3].array_spec.dtype",
      specs({ "m.header.minorVersion": 7, "e.3.dtype": 999 }),
      { message: "dtype 999 needs colocated\\.v1\\.7" },
    ],
    [
      "minor-version-above-the-agreed",
      "header.minor_version",
      specs({ "m.header.minorVersion": 3 }),
      { maxMinorVersion: 2, message: "minor version 3 is newer than the agreed 2" },
    ],
  ],
  "wrong-payload-kind": [
    ["program-as-specs", "header.kind", { ...program(), decoder: "specs" }],
    ["specs-as-program", "header.kind", { ...specs(), decoder: "program" }],
    ["kind-unspecified", "header.kind", specs({ "m.header.kind": 0 })],
  ],
  missing: [
    ["dict-key-without-a-value", "specs.treedef.keys[0]", specs(V1_1, dict(5, [{}]))],
    ["key-type", "table[3].array_spec.key_type", specs(V1_1, { "e.3.dtype": DType.D_TYPE_KEY })],
    ["table", "table", specs({ "m.table": undefined })],
    ["specs", "specs", specs({ "m.specs": undefined })],
    ["treedef", "specs.treedef", specs({ "m.specs.treedef": undefined })],
    ["mesh-devices", "table[1].mesh.device_list", specs({ "e.1.deviceList": undefined })],
    ["sharding-mesh", "table[2].named_sharding.mesh", specs({ "e.2.mesh": undefined })],
    ["device-ids", "table[0].device_list.ids", specs({ "e.0.ids": undefined })],
    ["iota", "table[0].device_list.iota.iota", specs({ "e.0.ids.value.iota": undefined })],
    ["tile-assignment", `${T7}.tile_assignment`, specs({ "e.7.tileAssignment": undefined })],
    [
      "tile-devices",
      `${T7}.tile_assignment.devices`,
      specs({ "e.7.tileAssignment.devices": undefined }),
    ],
    ["program-devices", "devices", program({ "m.devices": undefined })],
    ["program-function", "function", program({ "m.function": undefined })],
    ["module", "function.by_name.module", program({ "m.function.function.value.module": "" })],
    [
      "qualname",
      "function.by_name.qualname",
      program({ "m.function.function.value.qualname": "" }),
    ],
    ["input-specs", "input_specs", program({ "m.inputSpecs": undefined })],
  ],
  "reference-out-of-range": [
    [
      "leaf",
      "specs.leaves[0]",
      specs({ "m.specs.leaves.0": 99 }),
      { message: "(reference|entry) 99 is (past the end of|not in) a table of 9" },
    ],
    ["sharding", "table[3].array_spec.sharding", specs({ "e.3.sharding": 50 })],
    ["devices", "devices", program({ "m.devices": 9 })],
    [
      "pickled-function-ref",
      "function.pickled.refs[0]",
      program({ "m.function.function": pickled([50]) }),
    ],
    [
      "key-trie-label",
      "specs.treedef.key_trie.nodes[4]",
      specs(V1_3, trieDict(keyTrie(TRIE_LABELS, [0, written(2, 0), 1, written(0, 1), 3, 2]), 2)),
      { message: "label 3 of 3" },
    ],
    [
      "leaf-copies-distance-past-the-leaves-made",
      "specs.leaf_copies[1]",
      specs(V1_3, copiedList(8, [3, 5], [2, 3, 6])),
      { message: "copy 0 starts 3 leaves back from leaf 2" },
    ],
    [
      // The REPEAT's 4 leaves come before e, but are not in the leaf list: 4 leaves are made.
      "leaf-copies-distance-into-a-tree-repeat",
      "specs.leaf_copies[1]",
      specs(V1_3, copiedAfterRepeat([3, 5, 8, 5], [4, 6, 4])),
      { message: "copy 0 starts 6 leaves back from leaf 4" },
    ],
    [
      // The second copy reaches 5 back from the 3 leaves the written one and the first made.
      "leaf-copies-distance-in-output-specs",
      "output_specs.leaf_copies[4]",
      program(V1_3, copiedOutputs(6, [3], [1, 1, 2, 0, 5, 3])),
      { message: "copy 1 starts 5 leaves back from leaf 3" },
    ],
  ],
  "forward-reference": [
    [
      "tuple-dict-key-holds-itself",
      "specs.treedef.keys[0].tuple.items[0]",
      specs(V1_1, dict(5, [tuple(0)])),
    ],
    [
      "tree-repeat-forward",
      "specs.treedef.arities[2]",
      specs(V1_1, tree({ kinds: [4, 4, 1, REPEAT], arities: [2, 1, 4] }, 1)),
    ],
    [
      "tree-repeat-of-its-ancestor",
      "specs.treedef.arities[2]",
      specs(V1_1, tree({ kinds: [4, 4, 1, REPEAT], arities: [2, 1, 0] }, 1)),
    ],
    [
      // Node 0 "a." repeats node 1 "c.", whose child "b" follows: "a.b", "c.b".
      "key-trie-repeat-of-a-later-node",
      "specs.treedef.key_trie.nodes[1]",
      specs(
        V1_3,
        trieDict(
          keyTrie(["a.", "c.", "b"], [0, repeatOf(1), 1, written(1, 0), 2, written(0, 1)]),
          2,
        ),
      ),
      { message: "node 0 repeats node 1, which is not a written node before it" },
    ],
    [
      // Node 1 "c." under node 0 "a." repeats node 0, which is still open.
      "key-trie-repeat-of-its-ancestor",
      "specs.treedef.key_trie.nodes[3]",
      specs(V1_3, trieDict(keyTrie(["a.", "c."], [0, written(1, 1), 1, repeatOf(0)]), 2)),
      { message: "node 1 repeats node 0, which is not a written node before it" },
    ],
    [
      // "a.b", then "c." repeating "a." (node 2), then "d." repeating that repeat.
      "key-trie-repeat-of-a-repeat",
      "specs.treedef.key_trie.nodes[7]",
      specs(
        V1_3,
        trieDict(
          keyTrie(
            ["a.", "b", "c.", "d."],
            [0, written(1, 0), 1, written(0, 1), 2, repeatOf(0), 3, repeatOf(2)],
          ),
          3,
        ),
      ),
      { message: "node 3 repeats node 2, which is not a written node before it" },
    ],
    [
      "leaf-copies-distance-0",
      "specs.leaf_copies[4]",
      specs(V1_3, copiedList(8, [3, 5, 8], [2, 2, 2, 1, 0, 3])),
      { message: "copy 1 starts at the leaf it makes first" },
    ],
    [
      "mesh-refers-to-itself",
      "table[1].mesh.device_list",
      specs({ "e.1.deviceList": 1 }),
      { message: "entry 1 refers to entry 1" },
    ],
    ["sharding-refers-forward", "table[3].array_spec.sharding", specs({ "e.3.sharding": 4 })],
  ],
  "wrong-entry-kind": [
    ["leaf-is-a-mesh", "specs.leaves[0]", specs({ "m.specs.leaves.0": 1 })],
    ["leaf-is-a-sharding", "specs.leaves[1]", specs({ "m.specs.leaves.1": 2 })],
    ["input-leaf-is-a-sharding", "input_specs.leaves[0]", program({ "m.inputSpecs.leaves.0": 2 })],
    [
      "mesh-is-a-device-list",
      "table[2].named_sharding.mesh",
      specs({ "e.2.mesh": 0 }),
      { message: "entry 0 is a (DeviceList|device_list), not a? ?[Mm]esh" },
    ],
    [
      "devices-is-an-array-spec",
      "table[1].mesh.device_list",
      specs({ "m.table.entries.0": arraySpecEntry }),
    ],
    ["sharding-is-a-mesh", "table[3].array_spec.sharding", specs({ "e.3.sharding": 1 })],
    ["devices-is-a-mesh", "devices", program({ "m.devices": 1 })],
    [
      "devices-of-unknown-kind",
      "table[1].mesh.device_list",
      specs({ "m.table.entries.0": unknownKindEntry }),
    ],
  ],
  "unknown-enum": [
    [
      "dtype",
      "table[3].array_spec.dtype",
      specs({ "e.3.dtype": 999 }),
      { message: "unknown dtype 999" },
    ],
    ["dtype-unspecified", "table[3].array_spec.dtype", specs({ "e.3.dtype": 0 })],
    ["axis-type", "table[1].mesh.axis_types[1]", specs({ "e.1.axisTypes.1": 7 })],
    ["axis-type-unspecified", "table[1].mesh.axis_types[1]", specs({ "e.1.axisTypes.1": 0 })],
    ["node-kind", "specs.treedef.kinds[1]", specs({ "m.specs.treedef.kinds.1": 42 })],
    ["spec-entry-kind", `${SPEC}.entries[0].kind`, specs({ "e.2.spec.entries.0.kind": 9 })],
    ["sharding-type", `${T7}.type`, specs({ "e.7.type": 0 })],
    ["last-tile-dim-type", `${T7}.last_tile_dims[0]`, specs({ "e.7.lastTileDims": [9] })],
  ],
  "invalid-mesh": [
    [
      "sizes-and-devices",
      "table[1].mesh.axis_sizes",
      specs({ "e.1.axisSizes.1": 2 }),
      { message: "(2x2|\\[2, 2\\]) (do not )?hold .*8" },
    ],
    [
      "axis-counts",
      "table[1].mesh",
      specs({ "e.1.axisNames.push": "z" }),
      { message: "2 sizes, 3 names,? (and )?2 types" },
    ],
    [
      "axis-name-repeats",
      "table[1].mesh.axis_names[1]",
      specs({ "e.1.axisNames.1": "x" }),
      { message: "axis (name )?.x. repeats" },
    ],
    [
      "no-devices",
      "table[1].mesh.axis_sizes",
      // JAX aborted the process on a sharding with a memory kind over such a mesh.
      specs({ "e.0.ids": plain([]), "e.1.axisSizes": [0, 4], "e.2.memoryKind": "pinned_host" }),
    ],
  ],
  "duplicate-device": [
    [
      "plain-ids",
      "table[0].device_list.plain.ids[7]",
      specs({ "e.0.ids": plain([0, 1, 2, 3, 4, 5, 6, 3]) }),
      { message: "device (id )?3 appears twice" },
    ],
    [
      "delta-ids",
      "table[0].device_list.delta.deltas[2]",
      specs({ "e.0.ids": { $case: "delta", value: { deltas: [4, 1, -1, 5, 1, 1, 1, 1] } } }),
    ],
    [
      "tile-devices",
      `${T7}.tile_assignment.explicit.ids[3]`,
      specs({ "e.7.tileAssignment.devices.value.ids.3": 1 }),
    ],
  ],
  "invalid-iota": [
    [
      "perm-repeats",
      "table[0].device_list.iota.iota.transpose_perm",
      specs({ "e.0.ids.value.iota": iota([2, 4], [0, 0]) }),
    ],
    [
      "perm-too-short",
      "table[0].device_list.iota.iota.transpose_perm",
      specs({ "e.0.ids.value.iota": iota([2, 4], [0]) }),
    ],
    [
      "tile-iota-size",
      `${T7}.tile_assignment.iota.reshape_dims`,
      specs({ "e.7.tileAssignment.devices": { $case: "iota", value: iota([4], [0]) } }),
    ],
  ],
  "unknown-axis": [
    [
      "entry-axis",
      `${SPEC}.entries[0].axes[0]`,
      specs({ "e.2.spec.entries.0.axes": ["q"] }),
      { message: "(axis .q. is not a mesh axis|the mesh has no axis .q.)" },
    ],
    ["unreduced-axis", `${SPEC}.unreduced[0]`, specs({ "e.2.spec.unreduced": ["q"] })],
  ],
  "repeated-axis": [
    [
      "in-a-tuple",
      `${SPEC}.entries[1].axes[1]`,
      specs({ "e.2.spec.entries.push": { kind: 3, axes: ["y", "x"] } }),
    ],
    [
      "in-reduced",
      `${SPEC}.reduced[0]`,
      specs({ "e.2.spec.reduced": ["x"] }),
      { message: "axis .x. (is used|appears) twice" },
    ],
    ["in-unreduced", `${SPEC}.unreduced[0]`, specs({ "e.2.spec.unreduced": ["x"] })],
  ],
  "invalid-tree": [
    [
      "tree-leaves-short",
      "specs.treedef.arities[1]",
      specs(V1_1, tree({ kinds: [4, LEAVES], arities: [1, 1] }, 1)),
    ],
    [
      "tree-leaves-root",
      "specs.treedef.kinds[0]",
      specs(V1_1, tree({ kinds: [LEAVES], arities: [2] }, 2)),
    ],
    [
      "tree-leaves-past-the-parent",
      "specs.treedef.arities[1]",
      specs(V1_1, tree({ kinds: [4, LEAVES], arities: [2, 3] }, 3)),
    ],
    [
      "tree-repeat-of-leaves",
      "specs.treedef.arities[2]",
      specs(V1_1, tree({ kinds: [4, LEAVES, REPEAT], arities: [3, 2, 1] }, 2)),
    ],
    [
      "tree-key-text-and-strings",
      "specs.treedef.key_text",
      specs(V1_1, codedDict(utf8("a"), [0, 1], 1, { strings: ["a"] })),
    ],
    ["tree-key-sizes-odd", "specs.treedef.key_sizes", specs(V1_1, codedDict(utf8("a"), [0], 1))],
    [
      "tree-key-prefix-too-long",
      "specs.treedef.key_sizes[2]",
      specs(V1_1, codedDict(utf8("ab"), [0, 1, 2, 1], 2)),
    ],
    [
      "tree-key-suffix-overrun",
      "specs.treedef.key_sizes[3]",
      specs(V1_1, codedDict(utf8("ab"), [0, 1, 1, 5], 2)),
    ],
    [
      "tree-key-text-left-over",
      "specs.treedef.key_text",
      specs(V1_1, codedDict(utf8("abc"), [0, 1], 1)),
    ],
    [
      "tree-fresh-with-dict-keys",
      "specs.treedef.dict_keys",
      specs(V1_1, codedDict(utf8("a"), [0, 1], 1, { freshDictKeys: true })),
    ],
    [
      "tree-fresh-pool-left-over",
      "specs.treedef.fresh_dict_keys",
      specs(V1_1, codedDict(utf8("ab"), [0, 1, 0, 1], 1, { dictKeys: [], freshDictKeys: true })),
    ],
    [
      "tree-key-trie-and-key-text",
      "specs.treedef.key_trie",
      specs(
        V1_3,
        trieDict(keyTrie(TRIE_LABELS, TRIE_NODES), 2, { keyText: utf8("a.b"), keySizes: [0, 3] }),
      ),
      { message: "one of strings, key_text and key_trie" },
    ],
    [
      "tree-key-trie-and-strings",
      "specs.treedef.key_trie",
      specs(V1_3, trieDict(keyTrie(TRIE_LABELS, TRIE_NODES), 2, { strings: ["a.b"] })),
      { message: "one of strings, key_text and key_trie" },
    ],
    [
      "tree-key-trie-nodes-odd",
      "specs.treedef.key_trie.nodes",
      specs(V1_3, trieDict(keyTrie(TRIE_LABELS, [...TRIE_NODES, 0]), 2)),
      { message: "7 numbers, two per node" },
    ],
    [
      "tree-key-trie-node-without-key-or-children",
      "specs.treedef.key_trie.nodes[5]",
      specs(V1_3, trieDict(keyTrie(TRIE_LABELS, [0, written(2, 0), 1, written(0, 1), 2, 0]), 1)),
      { message: "node 2 has no key and no children" },
    ],
    [
      "tree-key-trie-more-children-than-follow",
      "specs.treedef.key_trie.nodes[1]",
      specs(
        V1_3,
        trieDict(keyTrie(TRIE_LABELS, [0, written(3, 0), 1, written(0, 1), 2, written(0, 1)]), 2),
      ),
      { message: "node 0 has 3 children, 2 nodes follow it" },
    ],
    [
      // "a." awaits two children; its child "b." has one, "c", and the nodes end: "a.b.c".
      "tree-key-trie-node-awaits-children",
      "specs.treedef.key_trie.nodes",
      specs(
        V1_3,
        trieDict(
          keyTrie(["a.", "b.", "c"], [0, written(2, 0), 1, written(1, 0), 2, written(0, 1)]),
          1,
        ),
      ),
      { message: "node 0 awaits 1 more children" },
    ],
    [
      "tree-key-trie-label-sizes-odd",
      "specs.treedef.key_trie.label_sizes",
      specs(
        V1_3,
        trieDict(
          keyTrie({ labelText: TRIE_TEXT, labelSizes: TRIE_SIZES.slice(0, 5) }, TRIE_NODES),
          2,
        ),
      ),
      { message: "5 sizes, two per label" },
    ],
    [
      "tree-key-trie-label-prefix-too-long",
      "specs.treedef.key_trie.label_sizes[2]",
      specs(
        V1_3,
        trieDict(keyTrie({ labelText: TRIE_TEXT, labelSizes: [0, 2, 3, 1, 0, 1] }, TRIE_NODES), 2),
      ),
      { message: "label 1 shares 3 bytes with a label of 2" },
    ],
    [
      "tree-key-trie-label-suffix-overrun",
      "specs.treedef.key_trie.label_sizes[3]",
      specs(
        V1_3,
        trieDict(keyTrie({ labelText: TRIE_TEXT, labelSizes: [0, 2, 0, 5, 0, 1] }, TRIE_NODES), 2),
      ),
      { message: "label 1 takes 5 bytes, label_text has 2 left" },
    ],
    [
      "tree-key-trie-label-text-left-over",
      "specs.treedef.key_trie.label_text",
      specs(
        V1_3,
        trieDict(keyTrie({ labelText: utf8("a.bcd"), labelSizes: TRIE_SIZES }, TRIE_NODES), 2),
      ),
      { message: "1 bytes of label_text are left over" },
    ],
    [
      "leaf-copies-not-three-numbers-each",
      "specs.leaf_copies",
      specs(V1_3, copiedList(8, [3, 5], [2, 2, 6, 0])),
      { message: "4 numbers, three per copy" },
    ],
    [
      // The first copy takes both written leaves; the second says one more comes before it.
      "leaf-copies-gap-past-the-written-leaves",
      "specs.leaf_copies[3]",
      specs(V1_3, copiedList(8, [3, 5], [2, 2, 2, 1, 2, 4])),
      { message: "copy 1 follows 1 written leaves; 0 are left" },
    ],
    [
      "leaf-copies-count-0",
      "specs.leaf_copies[2]",
      specs(V1_3, copiedList(8, [3, 5], [2, 2, 0])),
      { message: "copy 0 makes no leaves" },
    ],
    [
      // 2 written, 6 copied, and the written leaf left after the copy: 9 for a list of 8.
      "leaf-copies-pass-the-tree-leaves",
      "specs.leaf_copies[2]",
      specs(V1_3, copiedList(8, [3, 5, 8], [2, 2, 6])),
      { message: "the leaves pass the tree's 8 at copy 0" },
    ],
    [
      // 12 leaves with the REPEAT's, but the leaf list makes only the 8 the tree writes.
      "leaf-copies-make-the-leaves-of-a-tree-repeat",
      "specs.leaf_copies[2]",
      specs(V1_3, copiedAfterRepeat([3, 5, 8, 5], [4, 4, 8])),
      { message: "the leaves pass the tree's 8 at copy 0" },
    ],
    [
      // Without copies, as with them: the same words in both languages.
      "leaves-fewer-than-the-tree",
      "specs.leaves",
      specs(V1_3, copiedList(8, [3, 5, 3], [])),
      { message: "the tree has 8 leaves, the payload 3$" },
    ],
    [
      "leaf-copies-total-short",
      "specs.leaves",
      specs(V1_3, copiedList(8, [3, 5], [2, 2, 4])),
      { message: "the tree has 8 leaves, the payload 6 \\(2 written, 4 copied\\)" },
    ],
    [
      // The trie's keys "b", "a" in order, for a dict whose keys JAX sorts.
      "tree-key-trie-keys-unsorted",
      "specs.treedef.dict_keys[1]",
      specs(V1_3, freshTrieDict(keyTrie(["b", "a"], [0, written(0, 1), 1, written(0, 1)]), 2)),
      { message: "distinct and sorted" },
    ],
    [
      // "a" ends a key, and so does its child of an empty label: "a" twice.
      "tree-key-trie-key-twice",
      "specs.treedef.dict_keys[1]",
      specs(V1_3, freshTrieDict(keyTrie(["a", ""], [0, written(1, 1), 1, written(0, 1)]), 2)),
      { message: "distinct and sorted" },
    ],
    ["no-nodes", "specs.treedef.kinds", specs(tree({ kinds: [] }, 0))],
    [
      "arity-of-a-billion",
      "specs.treedef.arities[0]",
      specs({ "m.specs.treedef.arities.0": 1e9 }),
      { message: "claims 1000000000 children" },
    ],
    ["nodes-after-the-end", "specs.treedef.kinds[7]", specs({ "m.specs.treedef.kinds.push": 2 })],
    ["ends-early", "specs.treedef.kinds", specs(tree({ kinds: [4, 4, 1], arities: [2, 1] }, 1))],
    ["last-node-missing", "specs.treedef.arities[2]", specs({ "m.specs.treedef.kinds.pop": 1 })],
    ["unused-arities", "specs.treedef.arities", specs({ "m.specs.treedef.arities.push": 1 })],
    ["dict-keys-run-out", "specs.treedef.dict_keys", specs({ "m.specs.treedef.dictKeys": [0, 1] })],
    [
      "dict-keys-unsorted",
      "specs.treedef.dict_keys[1]",
      specs({ "m.specs.treedef.dictKeys.1": 0 }),
    ],
    ["dict-key-string", "specs.treedef.dict_keys[2]", specs({ "m.specs.treedef.dictKeys.2": 7 })],
    ["leaf-count", "specs.leaves", specs({ "m.specs.leaves.push": 3 })],
    ["too-few-leaves", "specs.leaves", specs({ "m.specs.leaves.pop": 1 })],
    [
      "int-dict-keys-unsorted",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(5, [int(2n), int(1n)])),
    ],
    [
      "dict-keys-of-two-kinds",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(5, ["a", int(1n)], ["a"])),
      { message: "cannot be sorted together" },
    ],
    [
      "ordered-dict-key-repeats",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(8, [int(1n), { key: { $case: "bool", value: true } }])),
      { message: "repeats" },
    ],
    [
      "dict-key-past-the-pool",
      "specs.treedef.dict_keys[0]",
      specs(V1_1, dict(5, [int(1n)], [], { dictKeys: [1] })),
    ],
    [
      "float-dict-keys-minus-zero-and-zero",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(5, [float(-0), float(0)])),
      { message: "distinct" },
    ],
    [
      "bytes-dict-keys-unsorted",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(5, [bytesKey(0x62), bytesKey(0x61)])),
    ],
    [
      // (1,) and ("a",): Python compares 1 < "a", which it cannot.
      "tuple-dict-keys-that-cannot-be-compared",
      "specs.treedef.dict_keys[1]",
      specs(
        V1_1,
        tree(
          {
            kinds: [5, 1, 1],
            arities: [2],
            strings: ["a"],
            dictKeys: [2, 3],
            keys: [int(1n), tuple(1), tuple(0)],
          },
          2,
        ),
      ),
      { message: "cannot be sorted together" },
    ],
    [
      "default-dict-keys-unsorted",
      "specs.treedef.dict_keys[1]",
      specs(V1_1, dict(9, ["b", "a"], ["b", "a"], DEFAULT)),
    ],
    [
      "namedtuple-type",
      "specs.treedef.type_refs[0]",
      specs(tree({ kinds: [6, 1], arities: [1], typeRefs: [1], nodeTypes: [namedTuple("x")] }, 1)),
    ],
    [
      "namedtuple-arity",
      "specs.treedef.arities[0]",
      specs(
        tree({ kinds: [6, 1], arities: [1], typeRefs: [0], nodeTypes: [namedTuple("x", "y")] }, 1),
      ),
    ],
  ],
  "invalid-value": [
    [
      "tree-key-text-utf8",
      "specs.treedef.key_text",
      specs(V1_1, codedDict(new Uint8Array([0x61, 0xff]), [0, 2], 1)),
    ],
    [
      // Labels "a.", 0xff, "c": the key "a." 0xff is not UTF-8.
      "tree-key-trie-label-utf8",
      "specs.treedef.key_trie.label_text",
      specs(
        V1_3,
        trieDict(
          keyTrie(
            { labelText: new Uint8Array([0x61, 0x2e, 0xff, 0x63]), labelSizes: TRIE_SIZES },
            TRIE_NODES,
          ),
          2,
        ),
      ),
      { message: "key 0 is not UTF-8" },
    ],
    [
      // Labels E2 82 (the start of "€"), then "a" and AC under it: "€" (key 1) is UTF-8 from
      // two labels that are not, and E2 82 "a" (key 0) is not.
      "tree-key-trie-labels-join-to-bad-utf8",
      "specs.treedef.key_trie.label_text",
      specs(
        V1_3,
        trieDict(
          keyTrie(
            { labelText: new Uint8Array([0xe2, 0x82, 0x61, 0xac]), labelSizes: TRIE_SIZES },
            TRIE_NODES,
          ),
          2,
        ),
      ),
      { message: "key 0 is not UTF-8" },
    ],
    [
      "dict-key-none-false",
      "specs.treedef.keys[0].none",
      specs(V1_1, dict(5, [{ key: { $case: "none", value: false } }])),
    ],
    [
      "dict-key-float-nan",
      "specs.treedef.keys[0].float",
      specs(V1_1, dict(5, [float(Number.NaN)])),
    ],
    [
      "pickled-namedtuple-type",
      "specs.treedef.node_types[0].pickle",
      specs(
        V1_1,
        tree(
          {
            kinds: [6, 1],
            arities: [1],
            typeRefs: [0],
            nodeTypes: [{ ...namedTuple("x"), pickle: new Uint8Array([0x80]) }],
          },
          1,
        ),
      ),
    ],
    [
      "pickled-default-factory-with-a-name",
      "specs.treedef.node_types[0].name",
      specs(
        V1_1,
        dict(9, ["a"], ["a"], {
          ...DEFAULT,
          nodeTypes: [{ ...LIST_FACTORY, pickle: new Uint8Array([0x80]) }],
        }),
      ),
    ],
    [
      "default-factory-with-fields",
      "specs.treedef.node_types[0].fields",
      specs(
        V1_1,
        dict(9, ["a"], ["a"], {
          ...DEFAULT,
          nodeTypes: [{ name: "builtins.list", fields: ["x"], pickle: NO_PICKLE }],
        }),
      ),
    ],
    ["key-type-of-a-float32", "table[3].array_spec.key_type", specs(V1_1, { "e.3.keyType": FRY })],
    [
      "key-impl-empty",
      "table[3].array_spec.key_type.impl",
      specs(V1_1, KEY, { "e.3.keyType": { impl: "", keyShape: [2n] } }),
    ],
    [
      "key-dim-above-2-53",
      "table[3].array_spec.key_type.key_shape[0]",
      specs(V1_1, KEY, { "e.3.keyType": { impl: "rbg", keyShape: [2n ** 60n] } }),
    ],
    [
      "device-id-above-int32",
      "table[0].device_list.plain.ids[7]",
      specs({ "e.0.ids": plain([...range(7), 2 ** 31]) }),
    ],
    [
      "delta-ids-above-int32",
      "table[0].device_list.delta.deltas[4]",
      specs({
        "e.0.ids": { $case: "delta", value: { deltas: [2 ** 31 - 4, 1, 1, 1, 1, 1, 1, 1] } },
      }),
    ],
    [
      "iota-offset",
      "table[0].device_list.iota.offset",
      specs({ "e.0.ids.value.offset": 2 ** 31 - 4 }),
    ],
    ["device-id", "table[4].single_device_sharding.device_id", specs({ "e.4.deviceId": 2 ** 31 })],
    [
      "dimension-above-2-to-the-53",
      "table[3].array_spec.shape[0]",
      specs({ "e.3.shape.0": 2n ** 53n }),
    ],
    ["empty-axis-name", "table[1].mesh.axis_names[0]", specs({ "e.1.axisNames.0": "" })],
    ["empty-memory-kind", "table[2].named_sharding.memory_kind", specs({ "e.2.memoryKind": "" })],
    [
      "two-axes-in-an-axis-entry",
      `${SPEC}.entries[0].axes`,
      specs({ "e.2.spec.entries.0.axes.push": "y" }),
    ],
    ["unreduced-auto-axis", `${SPEC}.unreduced[0]`, specs({ "e.2.spec.unreduced": ["y"] })],
    [
      "unconstrained-without-auto-axes",
      `${SPEC}.entries[1]`,
      specs({ "e.1.axisTypes": [2, 2], "e.2.spec.entries.push": { kind: 4, axes: [] } }),
    ],
    [
      "tile-device-beyond-the-list",
      `${T7}.tile_assignment.explicit.ids[0]`,
      specs({ "e.7.tileAssignment.devices.value.ids.0": 8 }),
    ],
    [
      "maximal-of-four-tiles",
      `${T7}.tile_assignment.dims`,
      specs({
        "e.7.type": 2,
        "e.7.tileAssignment.dims": [4],
        "e.7.tileAssignment.devices.value.ids": [0, 1, 2, 3],
      }),
    ],
    [
      "no-tiles",
      `${T7}.tile_assignment.dims`,
      specs({ "e.7.tileAssignment.dims": [0, 4], "e.7.tileAssignment.devices.value.ids": [] }),
    ],
    ["replicated-with-tiles", `${T7}.tile_assignment`, specs({ "e.7.type": 1 })],
    [
      "typed-and-replicated-last-dims",
      `${T7}.last_tile_dims`,
      specs({ "e.7.replicateOnLastTileDim": true, "e.7.lastTileDims": [1] }),
    ],
    ["too-many-typed-dims", `${T7}.last_tile_dims`, specs({ "e.7.lastTileDims": [1, 4, 1] })],
    ["gspmd-without-devices", `${T7}.device_list`, specs({ "e.6.ids": plain([]) })],
    [
      "manual-sharding-on-a-leaf",
      "table[8].array_spec.sharding",
      specs({ "e.7.type": 4, "e.7.tileAssignment": undefined }),
    ],
    [
      "sharding-rank-above-array-rank",
      "table[3].array_spec.sharding",
      specs({ "e.3.shape": [8n], "e.2.spec.entries.push": { kind: 1, axes: [] } }),
    ],
    [
      "maximal-sharding-on-a-scalar",
      "table[8].array_spec.sharding",
      specs({
        "e.7.type": 2,
        "e.7.tileAssignment": {
          dims: [],
          devices: { $case: "explicit", value: { ids: [3] } },
        },
        "e.8.shape": [],
      }),
    ],
    [
      "namedtuple-field-is-a-keyword",
      "specs.treedef.node_types[0].fields[1]",
      specs(
        tree(
          { kinds: [6, 1, 2], arities: [2], typeRefs: [0], nodeTypes: [namedTuple("x", "class")] },
          1,
        ),
      ),
    ],
  ],
  // Bombs: a few bytes that claim a lot.
  // Raised only by a reader that would unpickle (Python, with pickles allowed), when its
  // Python or cloudpickle differs from the writer's: python/tests/test_writer.py.
  "writer-mismatch": [],
  "limit-exceeded": [
    [
      "iota-of-2-to-the-40-devices",
      "table[0].device_list.iota.iota.reshape_dims",
      specs({ "e.0.ids.value.iota": iota([1 << 20, 1 << 20], [0, 1]) }),
    ],
    [
      "2-to-the-60-tiles",
      `${T7}.tile_assignment.dims`,
      specs({ "e.7.tileAssignment.dims": [1 << 30, 1 << 30] }),
    ],
    ["tree-1001-deep", "specs.treedef.kinds[1000]", specs(tree({}, 1), nested(1001))],
    [
      // Each tuple key holds the one before it twice: 127 expanded keys from 7 written.
      "tuple-dict-keys-expand-past-the-node-limit",
      "specs.treedef.keys[5]",
      specs(V1_1, poolDict(tupleChain(6, 2), 6)),
      { limits: { maxTreeNodes: 100 } },
    ],
    [
      "tuple-dict-key-nests-past-the-depth-limit",
      "specs.treedef.keys[3]",
      specs(V1_1, poolDict(tupleChain(3, 1), 3)),
      { limits: { maxTreeDepth: 3 } },
    ],
    // 23 doublings of a list of two leaves: 67 million nodes from 96 written.
    ["tree-repeat-bomb", "specs.treedef.kinds[85]", specs(V1_1, repeatBomb(23))],
    [
      "tree-repeat-too-deep",
      "specs.treedef.kinds[4]",
      specs(V1_1, tree({ kinds: [4, 4, 1, 4, REPEAT], arities: [2, 1, 1, 1] }, 1)),
      { limits: { maxTreeDepth: 2 } },
    ],
    [
      "tree-key-bytes",
      "specs.treedef.key_sizes[20]",
      specs(
        V1_1,
        tree(
          {
            kinds: [1],
            keyText: utf8("k".repeat(100)),
            keySizes: [
              0,
              100,
              ...Array(40)
                .fill(100)
                .map((n, i) => (i % 2 ? 0 : n)),
            ],
          },
          1,
        ),
      ),
      { limits: { maxPayloadBytes: 1000 } },
    ],
    [
      // 40 doublings: 2^41 keys from 120 nodes written, refused from the counts once past 1,000.
      "tree-key-trie-bomb",
      "specs.treedef.key_trie.nodes[53]",
      specs(V1_3, tree({ kinds: [1], keyTrie: keyTrieBomb(40) }, 1)),
      { limits: { maxTreeNodes: 1000 }, message: "more than the limit of 1000 keys" },
    ],
    [
      // A 100-byte label with the keys "<label>a", "<label>b" under it, repeated by ten more.
      "tree-key-trie-key-bytes",
      "specs.treedef.key_trie.nodes[13]",
      specs(
        V1_3,
        tree(
          {
            kinds: [1],
            keyTrie: keyTrie(
              ["k".repeat(100), "a", "b"],
              [
                0,
                written(2, 0),
                1,
                written(0, 1),
                2,
                written(0, 1),
                ...Array(10)
                  .fill([0, repeatOf(0)])
                  .flat(),
              ],
            ),
          },
          1,
        ),
      ),
      {
        limits: { maxPayloadBytes: 1000 },
        message: "the keys expand past the limit of 1000 bytes",
      },
    ],
    [
      // A 100-byte label, then ten that each share its 100 bytes.
      "tree-key-trie-label-bytes",
      "specs.treedef.key_trie.label_sizes[20]",
      specs(
        V1_3,
        tree(
          {
            kinds: [1],
            keyTrie: keyTrie(
              {
                labelText: utf8("k".repeat(100)),
                labelSizes: [0, 100, ...Array(10).fill([100, 0]).flat()],
              },
              [0, written(0, 1)],
            ),
          },
          1,
        ),
      ),
      {
        limits: { maxPayloadBytes: 1000 },
        message: "the labels expand past the limit of 1000 bytes",
      },
    ],
    ["mesh-of-65-axes", "table[1].mesh.axis_sizes", specs({ "e.1.axisSizes": Array(65).fill(1) })],
    [
      "spec-of-65-entries",
      `${SPEC}.entries`,
      specs({ "e.2.spec.entries": Array.from({ length: 65 }, () => ({ kind: 1, axes: [] })) }),
    ],
    [
      "iota-of-65-dims",
      "table[0].device_list.iota.iota.reshape_dims",
      specs({ "e.0.ids.value.iota": iota(Array(65).fill(1), range(65)) }),
    ],
    ["array-of-rank-65", "table[3].array_spec.shape", specs({ "e.3.shape": Array(65).fill(1n) })],
    [
      "tiles-of-65-dims",
      `${T7}.tile_assignment.dims`,
      specs({ "e.7.tileAssignment.dims": Array(65).fill(1) }),
    ],
    [
      "iota-dim-of-2-to-the-31",
      "table[0].device_list.iota.iota.reshape_dims",
      specs({ "e.0.ids.value.iota.reshapeDims.0": 2 ** 31 }),
    ],
    // Limits a decoder may set lower than the defaults.
    ["payload-of-10-bytes", "payload", specs(), { limits: { maxPayloadBytes: 10 } }],
    ["table-of-3-entries", "table.entries", specs(), { limits: { maxTableEntries: 3 } }],
    [
      "tile-devices-of-4",
      `${T7}.tile_assignment.explicit.ids`,
      specs(),
      { limits: { maxDevicesPerList: 4 } },
    ],
    [
      "plain-ids-of-4",
      "table[0].device_list.plain.ids",
      specs({ "e.0.ids": plain(range(8)) }),
      { limits: { maxDevicesPerList: 4 } },
    ],
    ["rank-of-1", "table[1].mesh.axis_sizes", specs(), { limits: { maxRank: 1 } }],
    ["tree-of-5-nodes", "specs.treedef.kinds", specs(), { limits: { maxTreeNodes: 5 } }],
    ["tree-1-deep", "specs.treedef.kinds[2]", specs(), { limits: { maxTreeDepth: 1 } }],
    [
      "one-unknown-field",
      "payload",
      raw("specs", [...HEADER, ...UNKNOWN_FIELD, ...UNKNOWN_FIELD]),
      { limits: { maxUnknownFields: 1 } },
    ],
  ],
};

function namedTuple(...fields: string[]) {
  return { name: "m.P", fields, pickle: NO_PICKLE };
}

/** Every case, named `<code>--<what>`. */
export const CORPUS_CASES: CorpusCase[] = Object.entries(ROWS).flatMap(([code, rows]) =>
  rows.map(([what, path, payload, options]) => ({
    ...payload,
    name: `${code}--${what}`,
    path,
    code: code as DecodeErrorCode,
    ...options,
  })),
);
