import fc from "fast-check";
import { BytesIds, SequenceIds } from "../src/entries/hash-cons";
import { treeContents } from "../src/entries/tree-repeats";
import { LEAF, NONE, type TreeNode } from "../src/model/tree";
import { range } from "./fixtures";

/**
 * The numeric hash-cons behind the 1.1 writer's REPEATs: ids are equal exactly when the
 * sequences are, against a reference keyed by strings; dict keys that Python finds equal but
 * that are written differently (1, True, "1") never share an id.
 */

const RUNS = { seed: 20_261_203, numRuns: 100 };

/** The ids a string-keyed map gives: the reference the hash-cons must agree with. */
function referenceIds<T>(items: readonly T[], text: (item: T) => string): number[] {
  const seen = new Map<string, number>();
  return items.map((item) => {
    const key = text(item);
    if (!seen.has(key)) seen.set(key, seen.size);
    return seen.get(key) as number;
  });
}

test("sequences get equal ids exactly when equal, as a string-keyed map gives them", () => {
  // Few distinct values and short lengths, so equal sequences recur; enough to grow the table.
  const sequence = fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 4 });
  fc.assert(
    fc.property(fc.array(sequence, { minLength: 1, maxLength: 400 }), (sequences) => {
      const ids = new SequenceIds();
      const got = sequences.map((s) => ids.id(s));
      expect(got).toEqual(referenceIds(sequences, (s) => s.join(",")));
      expect(ids.size).toBe(new Set(got).size);
    }),
    RUNS,
  );
});

test("a sequence is read only up to the length given", () => {
  const ids = new SequenceIds();
  expect(ids.id([1, 2, 9], 2)).toBe(ids.id([1, 2]));
  expect(ids.id([1, 2, 9], 3)).not.toBe(ids.id([1, 2]));
  expect(ids.id([], 0)).toBe(ids.id([7], 0));
});

test("ids stay right as the table grows many times", () => {
  const ids = new SequenceIds();
  const n = 20_000;
  const first = Array.from({ length: n }, (_, i) => ids.id([i, i >> 3, -i]));
  const again = Array.from({ length: n }, (_, i) => ids.id([i, i >> 3, -i]));
  expect(first).toEqual(range(n));
  expect(again).toEqual(range(n));
  expect(ids.size).toBe(n);
});

test("byte strings get equal ids exactly when equal, copies included", () => {
  const bytes = fc.uint8Array({ max: 3, maxLength: 4 });
  fc.assert(
    fc.property(fc.array(bytes, { minLength: 1, maxLength: 200 }), (items) => {
      const ids = new BytesIds();
      const got = items.map((b) => ids.id(new Uint8Array(b)));
      expect(got).toEqual(referenceIds(items, (b) => b.join(",")));
    }),
    RUNS,
  );
});

const dict = (keys: (string | bigint | boolean | null)[]) =>
  ({ kind: "dict", keys, children: keys.map(() => LEAF) }) as TreeNode;

test("dict keys written differently are different content, even where Python finds them equal", () => {
  const root: TreeNode = {
    kind: "list",
    children: [dict([1n]), dict([true]), dict(["1"]), dict([1n]), dict([null]), dict(["None"])],
  };
  // Leaves without refs all differ: give every leaf the same ref so only the keys decide.
  const { nodes, ids } = treeContents(root, [0, 0, 0, 0, 0, 0]);
  const dictIds = nodes.flatMap((node, p) => (node.kind === "dict" ? [ids[p]] : []));
  expect(dictIds[3]).toBe(dictIds[0]);
  expect(new Set(dictIds).size).toBe(5);
});

test("custom nodes differ by name and by node data, equal by value", () => {
  const custom = (typeName: string, data: number[]): TreeNode => ({
    kind: "custom",
    typeName,
    nodeData: new Uint8Array(data),
    children: [NONE],
  });
  const root: TreeNode = {
    kind: "tuple",
    children: [custom("m.A", [1]), custom("m.A", [1]), custom("m.B", [1]), custom("m.A", [2])],
  };
  const { ids } = treeContents(root);
  // Preorder: the tuple, then each custom node and its None.
  expect([ids[1], ids[3], ids[5], ids[7]]).toEqual([ids[1], ids[1], ids[5], ids[7]]);
  expect(new Set([ids[1], ids[5], ids[7]]).size).toBe(3);
});

test("a defaultdict's factory is part of its content: a name, None, or pickled bytes", () => {
  // A pickled factory is an object holding its bytes (the model's Pickled).
  const pickled = (data: number[]) => ({ bytes: new Uint8Array(data) }) as unknown as string;
  const factories = ["m.f", null, pickled([1]), pickled([1]), pickled([2]), "m.g", "m.f"];
  const root: TreeNode = {
    kind: "list",
    children: factories.map(
      (defaultFactory): TreeNode => ({
        kind: "default_dict",
        defaultFactory,
        keys: ["a"],
        children: [LEAF],
      }),
    ),
  };
  const { nodes, ids } = treeContents(
    root,
    factories.map(() => 0),
  );
  const got = nodes.flatMap((node, p) => (node.kind === "default_dict" ? [ids[p]] : []));
  expect(got[3]).toBe(got[2]);
  expect(got[6]).toBe(got[0]);
  expect(new Set(got).size).toBe(5);
});
