import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { type KeyTrie, TreeDef } from "../gen/ts/colocated/v1/tree";
import {
  DecodeError,
  decodeSpecs,
  encodeSpecs,
  ShapeDtypeStruct,
  type TreeNode,
  treeFlatten,
  treeUnflatten,
} from "../src";
import { frontCode } from "../src/entries/front-code";
import { buildKeyTrie, readKeyTrie, splitKey } from "../src/entries/key-trie";

/** buildKeyTrie's trie of `keys`. */
const trieOf = (keys: readonly string[]): KeyTrie => buildKeyTrie(keys);

/**
 * The str key pool as a trie of key parts (colocated.v1.3), by property:
 * - dicts of dotted, slashed, non-ASCII and repeating keys (flat and nested) come back equal,
 *   their keys in code-point order, at the default target (the trie chosen often enough to
 *   matter) and at 1.2 (never a trie);
 * - a pool given as a trie in any order decodes exactly when a dict may hold it in that order
 *   (the reader's `rises` lets a sorted dict skip its comparisons);
 * - readKeyTrie expands random hand-built tries (repeats of earlier written nodes, labels
 *   cut inside a UTF-8 character, shared less than they could) as a plain reference does, and
 *   its `rises` is a plain code-point comparison of neighbours;
 * - buildKeyTrie writes the tries of test/vectors/key_tries.json, which
 *   python/tests/test_key_trie.py checks Python's build_key_trie against.
 */

// Fixed seeds: the same cases on every run.
const FLAT = { seed: 20_270_301, numRuns: 100 };
const NESTED = { seed: 20_270_302, numRuns: 50 };
const ORDER = { seed: 20_270_303, numRuns: 200 };
const TRIES = { seed: 20_270_304, numRuns: 400 };

const UPDATE = process.env.UPDATE_VECTORS === "1";
const KEY_TRIES_JSON = join(__dirname, "vectors", "key_tries.json");
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const NO_LIMITS = { maxKeys: 1e9, maxBytes: 1e9 };

/** Python's order of str: code point by code point, a shorter prefix first. */
function compareByCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) as number);
  const y = Array.from(b, (c) => c.codePointAt(0) as number);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** One leaf per key, told apart by the key, so a key moved from its leaf is seen. */
function leafOf(key: string): ShapeDtypeStruct {
  return new ShapeDtypeStruct([1 + (utf8.encode(key).length % 5), key.length % 3], "float32");
}

// Parts and separators: ASCII words, a word with "_", digits, é, β, CJK, an astral char (a
// surrogate pair, above U+E000 by code point but below it in UTF-16) and U+E000 / U+FFFD.
const WORDS = [
  "a",
  "b",
  "w",
  "mlp",
  "attn",
  "up_proj",
  "12",
  "0",
  "é",
  "β",
  "日本",
  "𝔸",
  "\uE000",
  "\uFFFD",
  "x𝔸",
];
const SEPARATORS = [".", "/", "-", ":", " ", "_", ""];
const word = fc.constantFrom(...WORDS);
const separator = fc.constantFrom(...SEPARATORS);
/** A path of 1 to 4 parts, each but the last followed by a separator. */
const dotted = fc
  .array(fc.tuple(word, separator), { minLength: 1, maxLength: 4 })
  .map((parts) => parts.map(([w, s], i) => (i === parts.length - 1 ? w : w + s)).join(""));

/**
 * A set of keys with structure a trie shares: the same tails under many layer numbers, that
 * whole set under several prefixes, keys that are prefixes of others ("a", "a.", "a.b"), the
 * empty key, and a few arbitrary keys.
 */
const keySet = fc
  .record({
    prefixes: fc.uniqueArray(fc.tuple(dotted, separator), { minLength: 1, maxLength: 3 }),
    layers: fc.integer({ min: 1, max: 8 }),
    layerSep: separator,
    tails: fc.uniqueArray(dotted, { minLength: 1, maxLength: 5 }),
    cuts: fc.array(fc.nat(), { maxLength: 4 }),
    empty: fc.boolean(),
    others: fc.array(fc.oneof(dotted, fc.string({ unit: "binary", maxLength: 6 })), {
      maxLength: 4,
    }),
  })
  .map(({ prefixes, layers, layerSep, tails, cuts, empty, others }) => {
    const keys = new Set<string>();
    for (const [prefix, sep] of prefixes)
      for (let i = 0; i < layers; i++)
        for (const tail of tails) keys.add(`${prefix}${sep}layers${layerSep}${i}.${tail}`);
    // Prefixes of keys already there: each cut at a part's end, and just before it.
    const all = [...keys];
    for (const cut of cuts) {
      const key = all[cut % all.length];
      const parts = splitKey(key);
      const n = 1 + (cut % parts.length);
      const head = parts.slice(0, n).join("");
      keys.add(head);
      if (head.length > 1) keys.add(head.slice(0, -1).replace(/[\uD800-\uDBFF]$/, ""));
    }
    if (empty) keys.add("");
    for (const k of others) keys.add(k);
    return [...keys];
  });

/** A dict of `keys` (a Map, so no key is special to JavaScript). */
const dictOf = (keys: readonly string[]) => new Map(keys.map((k) => [k, leafOf(k)]));

function treeDefOf(bytes: Uint8Array): TreeDef {
  const treedef = SpecsPayload.decode(bytes).specs?.treedef;
  if (!treedef) throw new Error("no treedef");
  return treedef;
}

/** A decoded tree's dicts' keys, in preorder. */
function dictKeys(root: TreeNode): unknown[][] {
  const found: unknown[][] = [];
  const visit = (node: TreeNode) => {
    if (node.kind === "dict") found.push([...node.keys]);
    if ("children" in node) node.children.forEach(visit);
  };
  visit(root);
  return found;
}

/** Encodes `tree` at `target`, decodes it and checks it is the same tree; returns its TreeDef. */
function roundTrip(tree: unknown, targetMinorVersion?: number): TreeDef {
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  const bytes = encodeSpecs(treedef, leaves, { targetMinorVersion });
  const back = decodeSpecs(bytes);
  expect(back.treedef.equals(treedef)).toBe(true);
  expect(back.leaves.length).toBe(leaves.length);
  for (const [i, leaf] of back.leaves.entries()) expect(leaf.equals(leaves[i])).toBe(true);
  // Every dict's keys are in Python's order.
  for (const keys of dictKeys(back.treedef.root)) {
    const strings = keys as string[];
    expect(strings).toEqual([...strings].sort(compareByCodePoint));
  }
  return treeDefOf(bytes);
}

/** A written TreeDef's str key pool, read plainly from its trie or its front coding. */
function poolOf(t: TreeDef): string[] {
  if (t.keyTrie !== undefined) return readKeyTrie(t.keyTrie, "t", NO_LIMITS).keys;
  const keys: string[] = [];
  let previous = new Uint8Array(0);
  let at = 0;
  for (let i = 0; i < t.keySizes.length; i += 2) {
    const [prefix, suffix] = [t.keySizes[i], t.keySizes[i + 1]];
    const key = new Uint8Array(prefix + suffix);
    key.set(previous.subarray(0, prefix));
    key.set(t.keyText.subarray(at, at + suffix), prefix);
    at += suffix;
    keys.push(strictUtf8.decode(key));
    previous = key;
  }
  return keys;
}

/** The pool is a trie exactly when its trie takes fewer bytes than its front coding. */
function expectSmallerChosen(written: TreeDef): void {
  const pool = poolOf(written);
  const size = (t: TreeDef) => TreeDef.encode(t).finish().length;
  const asTrie = { ...written, keyText: new Uint8Array(0), keySizes: [], keyTrie: trieOf(pool) };
  const coded = frontCode(pool);
  const asText = {
    ...written,
    keyText: coded.keyText,
    keySizes: coded.keySizes,
    keyTrie: undefined,
  };
  if (written.keyTrie !== undefined) {
    const { labelText, labelSizes, nodes } = written.keyTrie;
    expect({ labelText, labelSizes, nodes }).toEqual(trieOf(pool));
  } else expect([written.keyText, written.keySizes]).toEqual([coded.keyText, coded.keySizes]);
  expect(written.keyTrie !== undefined).toBe(size(asTrie) < size(asText));
}

describe("dicts whose str keys are written as a trie", () => {
  test("a flat dict comes back with its keys in code-point order, the trie often chosen", () => {
    let tries = 0;
    let runs = 0;
    fc.assert(
      fc.property(keySet, (keys) => {
        runs++;
        const tree = dictOf(keys);
        const written = roundTrip(tree);
        const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
        const back = decodeSpecs(encodeSpecs(treedef, leaves));
        const root = back.treedef.root;
        expect(root.kind === "dict" && root.keys).toEqual([...keys].sort(compareByCodePoint));
        // Each leaf stays under its key.
        const rebuilt = treeUnflatten(back.treedef, back.leaves) as Record<
          string,
          ShapeDtypeStruct
        >;
        for (const k of keys) expect(rebuilt[k].equals(leafOf(k))).toBe(true);
        if (written.keyTrie !== undefined) {
          tries++;
          expect(written.keyText.length + written.keySizes.length + written.strings.length).toBe(0);
        }
        // 1.2 never sees a trie.
        expect(roundTrip(tree, 2).keyTrie).toBeUndefined();
        expectSmallerChosen(written);
      }),
      FLAT,
    );
    expect(tries).toBeGreaterThanOrEqual(0.5 * runs);
  });

  test("nested dicts (a pool in first-use order, not sorted) come back exactly", () => {
    // A tree of dicts up to three deep whose keys come from the same sets.
    const nested: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown; dict: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constant("leaf"),
        tie("dict"),
      ),
      dict: fc
        .tuple(keySet, fc.array(tie("node"), { maxLength: 6 }))
        .map(
          ([keys, kids]) =>
            new Map(
              keys.map((k, i) => [k, i < kids.length && kids[i] !== "leaf" ? kids[i] : leafOf(k)]),
            ),
        ),
    })).dict;
    let tries = 0;
    let runs = 0;
    fc.assert(
      fc.property(nested, (tree) => {
        runs++;
        const written = roundTrip(tree);
        if (written.keyTrie !== undefined) tries++;
        expectSmallerChosen(written);
        expect(roundTrip(tree, 2).keyTrie).toBeUndefined();
      }),
      NESTED,
    );
    expect(tries).toBeGreaterThanOrEqual(0.5 * runs);
  });

  test("a pool written as a trie in any order is taken exactly when its dict is sorted", () => {
    const distinct = fc
      .uniqueArray(fc.oneof(dotted, fc.constantFrom("", "a", "a.", "a.b", "a.b.c", "a-", "a0")), {
        minLength: 2,
        maxLength: 10,
      })
      .chain((keys) =>
        fc.oneof(fc.constant(keys), fc.shuffledSubarray(keys, { minLength: keys.length })),
      );
    fc.assert(
      fc.property(distinct, (keys) => {
        const sorted = [...keys].sort(compareByCodePoint);
        const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(
          new Map(sorted.map((k) => [k, leafOf("")])),
        );
        const message = SpecsPayload.decode(encodeSpecs(treedef, leaves));
        const t = message.specs?.treedef as TreeDef;
        expect(t.freshDictKeys).toBe(true);
        Object.assign(t, {
          strings: [],
          keyText: new Uint8Array(0),
          keySizes: [],
          keyTrie: trieOf(keys),
        });
        const bytes = SpecsPayload.encode(message).finish();
        const inOrder = keys.every((k, i) => i === 0 || compareByCodePoint(keys[i - 1], k) < 0);
        if (inOrder) {
          const root = decodeSpecs(bytes).treedef.root;
          expect(root.kind === "dict" && root.keys).toEqual(keys);
        } else {
          let error: unknown;
          try {
            decodeSpecs(bytes);
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(DecodeError);
          expect((error as DecodeError).code).toBe("invalid-tree");
          expect((error as DecodeError).path).toMatch(/^specs\.treedef\.dict_keys\[\d+\]$/);
        }
      }),
      ORDER,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// readKeyTrie on hand-built tries.

interface Built {
  /** The labels as bytes (any bytes: a label may end inside a UTF-8 character). */
  labels: Uint8Array[];
  trie: KeyTrie;
}

/** Labels front-coded, each sharing any number of the bytes it could share with the one before. */
function frontCodeLabels(
  labels: Uint8Array[],
  share: (max: number) => number,
): Pick<KeyTrie, "labelText" | "labelSizes"> {
  const text: number[] = [];
  const sizes: number[] = [];
  let previous: Uint8Array = new Uint8Array(0);
  for (const label of labels) {
    let common = 0;
    while (common < Math.min(previous.length, label.length) && previous[common] === label[common])
      common++;
    const p = share(common);
    sizes.push(p, label.length - p);
    text.push(...label.subarray(p));
    previous = label;
  }
  return { labelText: new Uint8Array(text), labelSizes: sizes };
}

/**
 * A random valid trie: written nodes with 0 to 3 children (a key ending at each leaf, and at
 * some inner nodes), and repeats of written nodes complete before them (with children or not).
 */
const randomTrie: fc.Arbitrary<Built> = fc.gen().map((g) => {
  const text = g(
    fc.constantFrom,
    ...["", "a", ".", "a.", "é", "β/", "日本", "𝔸", "\uE000", "\uFFFD", "ab", "_", "x𝔸:"],
  );
  const count = g(fc.integer, { min: 1, max: 7 });
  const labels: Uint8Array[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    let bytes = utf8.encode(
      `${g(fc.constantFrom, ...["", "a", "é", "𝔸", "\uE000", "b.", "日"])}${text}`,
    );
    // Now and then a label cut inside a character: only its neighbours make it UTF-8 again.
    if (g(fc.integer, { min: 0, max: 9 }) === 0 && bytes.length > 1)
      bytes = g(fc.boolean) ? bytes.subarray(0, bytes.length - 1) : bytes.subarray(1);
    const key = Array.from(bytes).join();
    if (!seen.has(key)) {
      seen.add(key);
      labels.push(bytes);
    }
  }
  const nodes: number[] = [];
  const complete: number[] = []; // written nodes whose subtrie has ended
  let budget = g(fc.integer, { min: 0, max: 40 });
  const node = (depth: number) => {
    budget--;
    const index = nodes.length / 2;
    const label = g(fc.integer, { min: 0, max: labels.length - 1 });
    if (complete.length > 0 && g(fc.integer, { min: 0, max: 3 }) === 0) {
      const source = complete[g(fc.integer, { min: 0, max: complete.length - 1 })];
      nodes.push(label, 2 * source + 1);
      return;
    }
    const children = depth >= 5 || budget <= 0 ? 0 : g(fc.integer, { min: 0, max: 3 });
    const end = children === 0 ? 1 : g(fc.integer, { min: 0, max: 1 });
    nodes.push(label, 4 * children + 2 * end);
    for (let c = 0; c < children; c++) node(depth + 1);
    complete.push(index);
  };
  const top = budget <= 0 ? 0 : g(fc.integer, { min: 0, max: 4 });
  for (let i = 0; i < top; i++) node(0);
  const { labelText, labelSizes } = frontCodeLabels(labels, (max) =>
    g(fc.integer, { min: 0, max }),
  );
  return { labels, trie: { labelText, labelSizes, nodes } };
});

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** The keys of a trie, plainly: each node's subtrie found by recursion, a repeat read as its source. */
function referenceKeys({ labels, trie }: Built): Uint8Array[] {
  const { nodes } = trie;
  const end: number[] = [];
  const parse = (i: number): number => {
    const form = nodes[2 * i + 1];
    let next = i + 1;
    if (form % 2 === 0) for (let c = 0; c < form >> 2; c++) next = parse(next);
    end[i] = next;
    return next;
  };
  const keys: Uint8Array[] = [];
  const expand = (i: number, prefix: Uint8Array) => {
    const full = concat(prefix, labels[nodes[2 * i]]);
    const form = nodes[2 * i + 1];
    const body = form % 2 === 1 ? (form - 1) / 2 : i;
    const bodyForm = nodes[2 * body + 1];
    if (bodyForm & 2) keys.push(full);
    for (let c = body + 1, n = 0; n < bodyForm >> 2; n++, c = end[c]) expand(c, full);
  };
  const tops: number[] = [];
  for (let i = 0; i < nodes.length / 2; i = parse(i)) tops.push(i);
  for (const i of tops) expand(i, new Uint8Array(0));
  return keys;
}

describe("readKeyTrie", () => {
  test("expands random tries as the reference does, and rises where the next key is above", () => {
    let valid = 0;
    let repeats = 0;
    fc.assert(
      fc.property(randomTrie, (built) => {
        const want = referenceKeys(built);
        let strings: string[] | undefined;
        try {
          strings = want.map((k) => strictUtf8.decode(k));
        } catch {
          strings = undefined;
        }
        if (strings === undefined) {
          let error: unknown;
          try {
            readKeyTrie(built.trie, "t", NO_LIMITS);
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(DecodeError);
          expect([(error as DecodeError).path, (error as DecodeError).code]).toEqual([
            "t.key_trie.label_text",
            "invalid-value",
          ]);
          return;
        }
        valid++;
        if (built.trie.nodes.some((x, i) => i % 2 === 1 && x % 2 === 1)) repeats++;
        const read = readKeyTrie(built.trie, "t", NO_LIMITS);
        expect(read.keys).toEqual(strings);
        const rises = strings.map((k, i) =>
          i > 0 && compareByCodePoint(strings[i - 1], k) < 0 ? 1 : 0,
        );
        expect(Array.from(read.rises)).toEqual(rises);
      }),
      TRIES,
    );
    expect(valid).toBeGreaterThan(TRIES.numRuns / 2);
    expect(repeats).toBeGreaterThan(TRIES.numRuns / 4);
  });

  test("reads back what buildKeyTrie writes, for any pool order", () => {
    fc.assert(
      fc.property(
        keySet.chain((keys) => fc.shuffledSubarray(keys, { minLength: keys.length })),
        (keys) => {
          const read = readKeyTrie(trieOf(keys), "t", NO_LIMITS);
          expect(read.keys).toEqual(keys);
          const rises = keys.map((k, i) =>
            i > 0 && compareByCodePoint(keys[i - 1], k) < 0 ? 1 : 0,
          );
          expect(Array.from(read.rises)).toEqual(rises);
        },
      ),
      { seed: 20_270_305, numRuns: 150 },
    );
  });

  test("astral and U+E000 keys: code-point order, not UTF-16's", () => {
    const keys = ["a.\uE000", "a.𝔸", "a.\uFFFD", "a.𝔸.b", "a.\uE000.b"];
    const read = readKeyTrie(trieOf(keys), "t", NO_LIMITS);
    expect(read.keys).toEqual(keys);
    expect(Array.from(read.rises)).toEqual([0, 1, 0, 1, 0]);
  });
});

// ---------------------------------------------------------------------------------------------
// The same trie from both languages: test/vectors/key_tries.json.

/** Key lists, in pool order, each written as its trie by both languages. */
const KEY_LISTS: string[][] = (() => {
  const layers = (prefix: string, n: number, tails: string[]) =>
    Array.from({ length: n }, (_, i) => tails.map((t) => `${prefix}${i}.${t}`)).flat();
  const moments = ["opt_state/mu/", "opt_state/nu/", "params/"].flatMap((p) =>
    layers(`${p}layers.`, 3, [
      "attn.q.w",
      "attn.k.w",
      "mlp.up_proj.weight",
      "mlp.down_proj.weight",
    ]),
  );
  return [
    [],
    [""],
    ["a"],
    ["", "a", "a.", "a.b", "a.b.c"],
    ["a.b.c", "a.b", "a.", "a"],
    ["a.b", "a.c", "w", "a.d"],
    [".", "..", "...", "./", "/."],
    ["x.1", "x.2", "y.1", "y.2", "z.1", "z.2"],
    layers("model.layers.", 12, [
      "mlp.up_proj.weight",
      "mlp.down_proj.weight",
      "self_attn.q_proj.weight",
    ]),
    moments,
    moments.map((k) => k.replace(/\./g, "/")),
    ["a-b:c d/e.f_g", "a-b:c d/e.f_h", "a-b:c d/x", "a-b:c-d"],
    ["é.ü", "é.ü.β", "β/γ", "β/δ", "日本.語", "日本.人"],
    ["\uE000.a", "\uE000.b", "𝔸.a", "𝔸.b", "\uFFFD.a", "\uFFFD.b"],
    ["p.𝔸.x", "p.𝔸.y", "q.𝔸.x", "q.𝔸.y", "r.\uE000.x", "r.\uE000.y"],
    ["nul\u0000a", "nul\u0000b", "tab\ta", "tab\tb", "\u007f.a", "\u007f.b"],
    ["a.b", "a.b.", "a.b..", "a.b...c"],
    ["h.0.w", "h.0.b", "h.1.w", "h.1.b", "h.2.w", "h.2.b", "h.3.w", "h.3", "h.4.w", "h.4.b"],
    [
      "enc.l.0.a",
      "enc.l.0.b",
      "enc.l.1.a",
      "enc.l.1.b",
      "dec.l.0.a",
      "dec.l.0.b",
      "dec.l.1.a",
      "dec.l.1.b",
    ],
    ["layer_0001", "layer_0002", "layer_0003", "layer_0001.w", "layer_0002.w"],
    ["a.a.a.a", "a.a.a", "a.a", "a", "b.a.a.a", "b.a.a", "b.a", "b"],
  ];
})();

interface KeyTrieJson {
  keys: string[];
  labelText: string;
  labelSizes: number[];
  nodes: number[];
}

function trieJson(keys: string[]): KeyTrieJson {
  const trie = trieOf(keys);
  return {
    keys,
    labelText: Buffer.from(trie.labelText).toString("base64"),
    labelSizes: trie.labelSizes,
    nodes: trie.nodes,
  };
}

describe("test/vectors/key_tries.json", () => {
  if (UPDATE) {
    test("is written", () => {
      writeFileSync(KEY_TRIES_JSON, `${JSON.stringify(KEY_LISTS.map(trieJson), null, 2)}\n`);
    });
  }

  test("holds the tries buildKeyTrie writes, which read back as their keys", () => {
    expect(existsSync(KEY_TRIES_JSON)).toBe(true);
    const committed: KeyTrieJson[] = JSON.parse(readFileSync(KEY_TRIES_JSON, "utf8"));
    expect(committed).toEqual(KEY_LISTS.map(trieJson));
    for (const { keys } of committed)
      expect(readKeyTrie(trieOf(keys), "t", NO_LIMITS).keys).toEqual(keys);
    // Some of them repeat a subtrie.
    expect(
      committed.filter((c) => c.nodes.some((x, i) => i % 2 === 1 && x % 2 === 1)).length,
    ).toBeGreaterThan(3);
  });
});
