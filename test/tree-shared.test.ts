import fc from "fast-check";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { NodeKind, type TreeDef } from "../gen/ts/colocated/v1/tree";
import {
  CustomNode,
  DecodeError,
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  forEachNode,
  Mesh,
  NamedSharding,
  NamedTuple,
  PartitionSpec as P,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  type TreeNode,
  Tuple,
  treeFlatten,
  tuple,
} from "../src";
import { OrderedDict } from "../src/model/tree-values";
import { range } from "./fixtures";

/**
 * colocated.v1.1 trees with shared subtrees: random trees that reuse one subtree object and
 * copy others by value (with leaves equal by value but distinct objects, as a fresh
 * NamedSharding per leaf makes them) come back equal, share exactly what the model shares,
 * and a 1.0 target or reader never sees LEAVES, REPEAT or front-coded keys.
 */

const RUNS = { seed: 20_261_203, numRuns: 200 };
const { LEAVES, REPEAT } = { LEAVES: NodeKind.NODE_KIND_LEAVES, REPEAT: NodeKind.NODE_KIND_REPEAT };

type Desc =
  | { leaf: number }
  | { none: true }
  | { list: Desc[] }
  | { tuple: Desc[] }
  | { dict: [string, Desc][] }
  | { ints: [number, Desc][] }
  | { ordered: [string, Desc][] }
  | { point: [Desc, Desc] }
  | { custom: Desc[] }
  /** The same object as an earlier container subtree (by its index, modulo their count). */
  | { same: number }
  /** A fresh copy, equal by value, of an earlier container subtree. */
  | { copy: number };

// Keys that front-code in every way: a shared prefix that splits a UTF-8 character (é, ü), a
// surrogate pair, NULs inside keys, a leading BOM (which a UTF-8 decoder must keep).
const KEYS = [
  ...["", "a", "b", "layer_0000", "layer_0001", "layer_0010", "é", "ü", "𝔵", "𝔵𝔶"],
  ...["a\u0000", "a\u0000b", "\uFEFFa", "\uFEFF"],
];

const desc: fc.Arbitrary<Desc> = fc.letrec<{ tree: Desc }>((tie) => {
  const children = fc.array(tie("tree"), { maxLength: 4 });
  const keyed = <K>(keys: fc.Arbitrary<K>) =>
    fc.uniqueArray(fc.tuple(keys, tie("tree")), { maxLength: 4, selector: ([k]) => k });
  return {
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.record({ leaf: fc.nat(5) }),
      fc.record({ none: fc.constant(true as const) }),
      fc.record({ list: children }),
      fc.record({ tuple: children }),
      fc.record({ dict: keyed(fc.constantFrom(...KEYS)) }),
      fc.record({ ints: keyed(fc.integer({ min: -2, max: 3 })) }),
      fc.record({ ordered: keyed(fc.constantFrom(...KEYS)) }),
      fc.record({ point: fc.tuple(tie("tree"), tie("tree")) }),
      fc.record({ custom: children }),
      fc.record({ same: fc.nat() }),
      fc.record({ same: fc.nat() }),
      fc.record({ copy: fc.nat() }),
      fc.record({ copy: fc.nat() }),
    ),
  };
}).tree;

/** Six leaves: 0 and 1 are equal by value (fresh equal shardings), as are 3 and 4. */
function leafPool(): ShapeDtypeStruct[] {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
  const sxy = () => new NamedSharding(mesh, new P("x", "y"));
  return [
    new ShapeDtypeStruct([8, 4], "float32", sxy()),
    new ShapeDtypeStruct([8, 4], "float32", sxy()),
    new ShapeDtypeStruct([8], "bfloat16", new NamedSharding(mesh, new P("x"))),
    new ShapeDtypeStruct([], "float32"),
    new ShapeDtypeStruct([], "float32"),
    new ShapeDtypeStruct([2], "int8", new SingleDeviceSharding(3)),
  ];
}

/** Builds a tree value from its description, in preorder, reusing and copying subtrees. */
function build(root: Desc, leaves: ShapeDtypeStruct[]): unknown {
  const made: unknown[] = [];
  const make = (d: Desc): unknown => {
    if ("same" in d || "copy" in d) {
      if (made.length === 0) return leaves[0];
      const earlier = made[("same" in d ? d.same : d.copy) % made.length];
      return "same" in d ? earlier : copy(earlier);
    }
    let value: unknown;
    if ("leaf" in d) return leaves[d.leaf];
    if ("none" in d) return null;
    if ("list" in d) value = d.list.map(make);
    else if ("tuple" in d) value = tuple(...d.tuple.map(make));
    else if ("dict" in d) value = Object.fromEntries(d.dict.map(([k, v]) => [k, make(v)]));
    else if ("ints" in d) value = new Map(d.ints.map(([k, v]) => [k, make(v)]));
    else if ("ordered" in d) value = new OrderedDict(d.ordered.map(([k, v]) => [k, make(v)]));
    else if ("point" in d) value = new NamedTuple("m.Point", ["x", "y"], d.point.map(make));
    else value = new CustomNode("m.Node", new Uint8Array([7]), d.custom.map(make));
    made.push(value);
    return value;
  };
  return make(root);
}

/** A copy equal by value and sharing no object: fresh containers, fresh equal leaves. */
function copy(value: unknown): unknown {
  if (value === null) return null;
  if (value instanceof ShapeDtypeStruct) {
    return new ShapeDtypeStruct(value.shape, value.dtype, value.sharding, {
      weakType: value.weakType,
    });
  }
  if (Array.isArray(value)) return value.map(copy);
  if (value instanceof Tuple) return tuple(...value.items.map(copy));
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, copy(v)]));
  if (value instanceof OrderedDict) {
    return new OrderedDict(value.entries.map(([k, v]) => [k, copy(v)]));
  }
  if (value instanceof NamedTuple) {
    return new NamedTuple(value.typeName, value.fields, value.values.map(copy));
  }
  if (value instanceof CustomNode) {
    return new CustomNode(value.typeName, new Uint8Array(value.nodeData), value.children.map(copy));
  }
  const entries = Object.entries(value as Record<string, unknown>);
  return Object.fromEntries(entries.map(([k, v]) => [k, copy(v)]));
}

/**
 * Per node position in preorder: the node object, and its content (structure and the table
 * object at each of its leaves) as a string, computed independently of the codec.
 */
function contents(root: TreeNode, leaves: readonly ShapeDtypeStruct[]) {
  const objectIds = new Map<unknown, number>();
  const idOf = (o: unknown) => {
    if (!objectIds.has(o)) objectIds.set(o, objectIds.size);
    return objectIds.get(o);
  };
  const nodes: TreeNode[] = [];
  forEachNode(root, (node) => nodes.push(node));
  const keys: string[] = new Array(nodes.length);
  let leaf = leaves.length;
  const done: string[] = [];
  for (let p = nodes.length - 1; p >= 0; p--) {
    const node = nodes[p];
    if (node.kind === "leaf") keys[p] = `L${idOf(leaves[--leaf])}`;
    else if (node.kind === "none") keys[p] = "N";
    else {
      const own = { ...node, children: undefined, nodeData: undefined };
      const kids = node.children.map(() => done.pop());
      keys[p] = JSON.stringify([own, kids], (_, v) => (typeof v === "bigint" ? `${v}n` : v));
    }
    done.push(keys[p]);
  }
  return { nodes, keys };
}

function treedefOf(bytes: Uint8Array): TreeDef {
  return SpecsPayload.decode(bytes).specs?.treedef as TreeDef;
}

/** Whether a TreeDef uses any construct of the 1.1 tree encoding. */
function uses11(t: TreeDef): boolean {
  return (
    t.kinds.some((k) => k === LEAVES || k === REPEAT) ||
    t.keyText.length > 0 ||
    t.keySizes.length > 0 ||
    t.freshDictKeys
  );
}

describe("colocated.v1.1 trees with shared subtrees", () => {
  test("decode gives an equal tree, its leaves, and shares nodes exactly where content is equal", () => {
    let repeats = 0;
    fc.assert(
      fc.property(desc, (d) => {
        const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(build(d, leafPool()));
        const bytes = encodeSpecs(treedef, leaves);
        const back = decodeSpecs(bytes);
        expect(back.treedef.equals(treedef)).toBe(true);
        expect(back.leaves).toHaveLength(leaves.length);
        for (const [i, leaf] of back.leaves.entries()) {
          expect(leaf.equals(leaves[i])).toBe(true);
          // One lifted object per table entry: equal leaves are one object.
          for (const other of back.leaves) expect(leaf === other).toBe(leaf.equals(other));
        }
        const { nodes, keys } = contents(back.treedef.root, back.leaves);
        for (let p = 0; p < nodes.length; p++) {
          const node = nodes[p];
          if (!("children" in node) || node.children.length === 0) continue;
          for (let q = 0; q < p; q++) {
            const other = nodes[q];
            if (!("children" in other) || other.children.length === 0) continue;
            expect(node === other).toBe(keys[p] === keys[q]);
          }
        }
        expect(encodeSpecs(back.treedef, back.leaves)).toEqual(bytes);
        if (treedefOf(bytes).kinds.includes(REPEAT)) repeats++;
      }),
      RUNS,
    );
    // The draws do exercise REPEAT.
    expect(repeats).toBeGreaterThan(RUNS.numRuns / 10);
  });

  test("a 1.0 target writes none of LEAVES, REPEAT, key_text or fresh_dict_keys", () => {
    fc.assert(
      fc.property(desc, (d) => {
        const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(build(d, leafPool()));
        let bytes: Uint8Array;
        try {
          bytes = encodeSpecs(treedef, leaves, { targetMinorVersion: 0 });
        } catch (error) {
          // Int-keyed dicts are 1.1 only: a 1.0 target refuses them, naming 1.1.
          expect(String(error)).toMatch(/needs colocated\.v1\.1/);
          return;
        }
        const t = treedefOf(bytes);
        expect(uses11(t)).toBe(false);
        expect(t.arities.length).toBe(t.kinds.filter((k) => k > 2).length);
        expect(SpecsPayload.decode(bytes).specs?.leaves).toHaveLength(leaves.length);
        // 1.0 wrote an OrderedDict as a custom node, which reads back as one.
        let ordered = false;
        forEachNode(treedef.root, (node) => {
          ordered ||= node.kind === "ordered_dict";
        });
        if (!ordered) expect(decodeSpecs(bytes).treedef.equals(treedef)).toBe(true);
      }),
      RUNS,
    );
  });

  test("a 1.0 header with 1.1 tree constructs is refused, naming 1.1", () => {
    let refused = 0;
    fc.assert(
      fc.property(desc, (d) => {
        const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(build(d, leafPool()));
        const message = SpecsPayload.decode(encodeSpecs(treedef, leaves));
        if (!uses11(message.specs?.treedef as TreeDef)) return;
        (message.header as { minorVersion: number }).minorVersion = 0;
        const bytes = SpecsPayload.encode(message).finish();
        expect(() => decodeSpecs(bytes)).toThrow(/needs colocated\.v1\.1/);
        try {
          decodeSpecs(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(DecodeError);
          expect((error as DecodeError).code).toBe("unsupported-version");
        }
        refused++;
      }),
      RUNS,
    );
    expect(refused).toBeGreaterThan(RUNS.numRuns / 4);
  });
});

describe("REPEAT expands within the limits", () => {
  /** Specs whose tree is `columns`, its `leaves` leaves all one f32 spec, under a 1.1 header. */
  function specsWith(columns: Partial<TreeDef>, leaves: number): Uint8Array {
    const leaf = new ShapeDtypeStruct([1], "float32");
    const message = SpecsPayload.decode(encodeSpecs(treeFlatten([leaf]).treedef, [leaf]));
    const ref = message.specs?.leaves[0] as number;
    message.specs = {
      treedef: { ...(message.specs?.treedef as TreeDef), ...columns },
      leaves: Array(leaves).fill(ref),
      leafCopies: [],
    };
    return SpecsPayload.encode(message).finish();
  }

  /**
   * A list of two leaves, then `levels` lists each of two REPEATs of the one before, each
   * nested in the next, so that each is complete before the next refers to it; written from
   * node `at` on.
   */
  function doublings(levels: number, at = 0): Partial<TreeDef> {
    const kinds = [NodeKind.NODE_KIND_LIST, NodeKind.NODE_KIND_LIST, LEAVES];
    const arities = [2, 2, 2];
    let previous = at + 1;
    for (let k = 0; k < levels; k++) {
      kinds.push(NodeKind.NODE_KIND_LIST, NodeKind.NODE_KIND_LIST, REPEAT, REPEAT);
      arities.push(2, 2, previous, previous);
      previous = at + kinds.length - 3;
    }
    return { kinds: [...kinds, NodeKind.NODE_KIND_NONE], arities };
  }

  const errorOf = (bytes: Uint8Array, limits = {}) => {
    try {
      decodeSpecs(bytes, { limits });
    } catch (error) {
      return error as DecodeError;
    }
    throw new Error("decoded");
  };

  test("a chain of doublings past max_tree_nodes is refused where it passes", () => {
    // 40 doublings claim 2^42 nodes; the limit of 1,000 passes at the 7th level's second REPEAT.
    const error = errorOf(specsWith(doublings(40), 2), { maxTreeNodes: 1000 });
    expect(error.code).toBe("limit-exceeded");
    expect(error.path).toBe("specs.treedef.kinds[30]");
  });

  test("a subtree repeated a million times is refused by the node limit, not expanded", () => {
    // A list of: one doubling (node 1 on; its 7-node list A1 is node 5), then a million
    // REPEATs of A1. 14 nodes precede the REPEATs, each adds 7: the limit of 5 million
    // passes at REPEAT 714,283 (node 714,292), found from sizes, with nothing expanded.
    const chain = doublings(1, 1);
    const kinds = [NodeKind.NODE_KIND_LIST, ...(chain.kinds as NodeKind[])];
    const arities = [1_000_001, ...(chain.arities as number[])];
    for (let r = 0; r < 1_000_000; r++) {
      kinds.push(REPEAT);
      arities.push(5);
    }
    const error = errorOf(specsWith({ kinds, arities }, 2), { maxTreeNodes: 5_000_000 });
    expect(error.code).toBe("limit-exceeded");
    expect(error.path).toBe("specs.treedef.kinds[714292]");
  }, 60_000);

  test("within the limits, a chain of doublings lifts to shared nodes", () => {
    const back = decodeSpecs(specsWith(doublings(10), 2));
    expect(back.leaves).toHaveLength(2 ** 12 - 2);
    const top = back.treedef.root;
    if (!("children" in top)) throw new Error("the root is a list");
    const level1 = top.children[1];
    if (!("children" in level1)) throw new Error("a doubling is a list");
    const pair = level1.children[0];
    if (!("children" in pair)) throw new Error("a doubling is a list");
    expect(pair.children[0]).toBe(top.children[0]);
    expect(pair.children[1]).toBe(top.children[0]);
  });
});
