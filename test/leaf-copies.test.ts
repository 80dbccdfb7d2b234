import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  DecodeError,
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  Mesh,
  NamedSharding,
  PartitionSpec as P,
  SCHEMA_MINOR_VERSION,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import {
  checkLeafCopies,
  expandLeafCopies,
  findLeafCopies,
  LEAF_COPIES_SINCE,
  MIN_COPY,
  type WrittenLeaves,
} from "../src/entries/leaf-copies";
import { range } from "./fixtures";
import { seededRandom } from "./support/seeded-random";

/**
 * Leaf copies (colocated.v1.3), by property and by example:
 * - findLeafCopies then expandLeafCopies gives the references back, its copies pass the checker
 *   for the list's length, each copy's three varints take fewer bytes than the references it
 *   makes (so the written form's varints never outweigh the plain list's), and it finds exactly
 *   the copies a plain reference of its rule finds (hash collisions and chains included);
 * - expandLeafCopies of arbitrary valid copies is a naive one-leaf-at-a-time expansion;
 * - checkLeafCopies refuses each kind of bad copy at its exact path, with its code;
 * - encodeSpecs writes copies only for a 1.3 reader, and both forms decode to the same leaves;
 * - findLeafCopies writes the copies of test/vectors/leaf_copies.json, which
 *   python/tests/test_leaf_copies.py checks Python's find_leaf_copies against.
 */

// Fixed seeds: the same cases on every run.
const FIND = { seed: 20_270_401, numRuns: 150 };
const EXPAND = { seed: 20_270_402, numRuns: 200 };
const REFUSE = { seed: 20_270_403, numRuns: 300 };

const UPDATE = process.env.UPDATE_VECTORS === "1";
const LEAF_COPIES_JSON = join(__dirname, "vectors", "leaf_copies.json");
const VECTORS = join(__dirname, "vectors");

/** The bytes a uint32 takes as a varint. */
function varintSize(value: number): number {
  let size = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) size++;
  return size;
}

const varintBytes = (values: readonly number[]) => values.reduce((s, v) => s + varintSize(v), 0);

/** The copies as (gap, distance, count) triples. */
function triples(copies: readonly number[]): [number, number, number][] {
  const out: [number, number, number][] = [];
  for (let c = 0; c < copies.length; c += 3) out.push([copies[c], copies[c + 1], copies[c + 2]]);
  return out;
}

/** Expands copies one leaf at a time, as the schema words it. */
function naiveExpand(written: readonly number[], copies: readonly number[]): number[] {
  const out: number[] = [];
  let w = 0;
  for (const [gap, distance, count] of triples(copies)) {
    for (let k = 0; k < gap; k++) out.push(written[w++]);
    for (let k = 0; k < count; k++) out.push(out[out.length - distance]);
  }
  while (w < written.length) out.push(written[w++]);
  return out;
}

/**
 * The writer's rule, plainly: at each position (not inside a copy) with MIN_COPY references
 * left, the latest earlier such position whose first MIN_COPY references are the same (a Map by
 * their text: no hash table of numbers, no chains); the copy as long as the two agree, compared
 * one by one, taken when its varints (the first copy's with 2 bytes more, the field's tag and
 * length) are fewer bytes than the references it makes.
 */
function referenceFind(refs: readonly number[]): WrittenLeaves {
  const n = refs.length;
  if (n <= MIN_COPY) return { leaves: refs.slice(), copies: [] };
  const latest = new Map<string, number>();
  const leaves: number[] = [];
  const copies: number[] = [];
  let gap = 0;
  let i = 0;
  while (i + MIN_COPY <= n) {
    const run = refs.slice(i, i + MIN_COPY).join(",");
    const p = latest.get(run) ?? -1;
    latest.set(run, i);
    if (p >= 0) {
      let length = 0;
      while (i + length < n && refs[p + length] === refs[i + length]) length++;
      const field = copies.length === 0 ? 2 : 0;
      const cost = field + varintSize(gap) + varintSize(i - p) + varintSize(length);
      if (cost < varintBytes(refs.slice(i, i + length))) {
        copies.push(gap, i - p, length);
        gap = 0;
        i += length;
        continue;
      }
    }
    leaves.push(refs[i++]);
    gap++;
  }
  while (i < n) leaves.push(refs[i++]);
  return { leaves, copies };
}

// ---------------------------------------------------------------------------------------------
// Reference lists with repeats: fresh references, earlier runs again (overlapping what they
// make, so cycles), over alphabets of one-, two-, three- and five-byte references.

type Chunk = { fresh: number[] } | { back: number; length: number } | { stretch: number };

const chunk: fc.Arbitrary<Chunk> = fc.oneof(
  fc.record({ fresh: fc.array(fc.nat(), { minLength: 1, maxLength: 8 }) }),
  fc.record({ back: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
  // Distinct two-byte references, so gaps and distances of 128 and more.
  fc.record({ stretch: fc.integer({ min: 100, max: 300 }) }),
);

const ALPHABETS: ((v: number) => number)[] = [
  (v) => v % 2,
  (v) => v % 5,
  (v) => v % 40,
  (v) => 120 + (v % 20), // one and two bytes
  (v) => 16_380 + (v % 10), // two and three bytes
  (v) => 0xffff_fff0 + (v % 16), // five bytes
  (v) => v % 0x1_0000_0000,
];

function buildRefs(chunks: Chunk[], alphabet: (v: number) => number): number[] {
  const out: number[] = [];
  let stretched = 0;
  for (const c of chunks) {
    if ("stretch" in c) {
      for (let k = 0; k < c.stretch; k++) out.push(0x80 + stretched++);
    } else if ("fresh" in c || out.length === 0) {
      for (const v of "fresh" in c ? c.fresh : [c.back]) out.push(alphabet(v));
    } else {
      let from = out.length - 1 - (c.back % out.length);
      for (let k = 0; k < c.length; k++) out.push(out[from++]);
    }
  }
  return out;
}

const refLists: fc.Arbitrary<number[]> = fc
  .tuple(fc.array(chunk, { maxLength: 30 }), fc.integer({ min: 0, max: ALPHABETS.length - 1 }))
  .map(([chunks, a]) => buildRefs(chunks, ALPHABETS[a]));

describe("findLeafCopies", () => {
  test("then expandLeafCopies gives the references back, and the copies pass the checker", () => {
    fc.assert(
      fc.property(refLists, (refs) => {
        const { leaves, copies } = findLeafCopies(refs);
        expect(expandLeafCopies(leaves, copies)).toEqual(refs);
        expect(naiveExpand(leaves, copies)).toEqual(refs);
        checkLeafCopies(copies, leaves.length, refs.length, "specs", LEAF_COPIES_SINCE);
        checkLeafCopies(copies, leaves.length, refs.length, "specs", SCHEMA_MINOR_VERSION);
      }),
      FIND,
    );
  });

  test("takes a copy only when its varints are fewer bytes than the references it makes", () => {
    fc.assert(
      fc.property(refLists, (refs) => {
        const { leaves, copies } = findLeafCopies(refs);
        let made = 0;
        for (const [gap, distance, count] of triples(copies)) {
          made += gap;
          expect(count).toBeGreaterThanOrEqual(MIN_COPY);
          expect(distance).toBeGreaterThanOrEqual(1);
          const field = made === gap ? 2 : 0; // the first copy pays for the field
          const cost = field + varintSize(gap) + varintSize(distance) + varintSize(count);
          expect(cost).toBeLessThan(varintBytes(refs.slice(made, made + count)));
          made += count;
        }
        const written = varintBytes(leaves) + varintBytes(copies) + 2;
        if (copies.length === 0) expect(leaves).toEqual(refs);
        else expect(written).toBeLessThan(varintBytes(refs));
      }),
      FIND,
    );
  });

  test("finds the copies of its rule, as a plain reference without a hash table does", () => {
    fc.assert(
      fc.property(refLists, (refs) => {
        expect(findLeafCopies(refs)).toEqual(referenceFind(refs));
      }),
      FIND,
    );
  });

  test("writes a cycle of 16 over 10,000 leaves as its first cycle and one copy", () => {
    const refs = range(10_000).map((i) => i % 16);
    expect(findLeafCopies(refs)).toEqual({ leaves: range(16), copies: [16, 16, 9984] });
  });

  test("copies from the latest earlier run seen, not the longest", () => {
    // 1..8 is seen at 0, and 1 2 3 4 9 at 208 (too far back to be copied from 0); after a copy
    // of 77s, 1 2 3 4 is copied from 208, four leaves, and 5 6 7 8 is left as leaves: a copy
    // from 4 back, 221 leaves after the copy before it, would take four bytes too.
    const refs = [...range(8, 1), ...range(200, 1000), 1, 2, 3, 4, 9, ...Array(8).fill(77)];
    refs.push(...range(8, 1));
    const leaves = [...range(8, 1), ...range(200, 1000), 1, 2, 3, 4, 9, 77, 5, 6, 7, 8];
    expect(findLeafCopies(refs)).toEqual({ leaves, copies: [214, 1, 7, 0, 13, 4] });
  });

  test("does not see the runs inside a copy", () => {
    // 5 6 7 8 and 3 4 5 6 are copied from the first 1..8, not from the copy of it.
    const refs = [...range(8, 1), ...range(8, 1), 0, 5, 6, 7, 8, 0, 3, 4, 5, 6];
    expect(findLeafCopies(refs)).toEqual({
      leaves: [...range(8, 1), 0, 0],
      copies: [8, 8, 8, 1, 13, 4, 1, 20, 4],
    });
  });

  test("leaves a run of four out when its copy takes as many bytes", () => {
    // 200 distinct leaves apart: gap and distance take two bytes each, so a copy of four small
    // references (five bytes) is not taken, and a copy of four two-byte ones is.
    const filler = range(200, 1000);
    const small = [1, 2, 3, 4, ...filler, 1, 2, 3, 4];
    expect(findLeafCopies(small).copies).toEqual([]);
    const large = [200, 201, 202, 203, ...filler, 200, 201, 202, 203];
    expect(findLeafCopies(large).copies).toEqual([204, 204, 4]);
  });
});

// ---------------------------------------------------------------------------------------------
// Arbitrary valid copies, and each way of breaking one.

interface CopiesCase {
  written: number[];
  copies: number[];
  leafCount: number;
  /** Before each copy: the written leaves read and the leaves made before its gap. */
  before: { read: number; made: number }[];
}

const copyOps = fc.record({
  ops: fc.array(
    fc.record({
      gap: fc.nat(4),
      back: fc.nat(),
      count: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 300 })),
    }),
    { maxLength: 8 },
  ),
  tail: fc.nat(4),
});

type CopyOps = typeof copyOps extends fc.Arbitrary<infer T> ? T : never;

function validCopies({ ops, tail }: CopyOps): CopiesCase {
  // Each written leaf a number of its own, so a leaf made from the wrong place is seen.
  const written: number[] = [];
  const copies: number[] = [];
  const before: CopiesCase["before"] = [];
  let made = 0;
  for (const op of ops) {
    const gap = made === 0 && op.gap === 0 ? 1 : op.gap;
    before.push({ read: written.length, made });
    for (let k = 0; k < gap; k++) written.push(1000 + written.length);
    made += gap;
    copies.push(gap, 1 + (op.back % made), op.count);
    made += op.count;
  }
  for (let k = 0; k < tail; k++) written.push(1000 + written.length);
  return { written, copies, leafCount: made + tail, before };
}

const copiesCases = copyOps.map(validCopies);

/** The DecodeError checkLeafCopies throws, as [path, code]. */
function refusal(copies: number[], written: number, leafCount: number, minor = 3) {
  try {
    checkLeafCopies(copies, written, leafCount, "specs", minor);
  } catch (e) {
    expect(e).toBeInstanceOf(DecodeError);
    return [(e as DecodeError).path, (e as DecodeError).code];
  }
  return "accepted";
}

type Fault = "numbers" | "gap" | "distance0" | "distanceFar" | "count0" | "countPast" | "short";
const FAULTS: Fault[] = ["numbers", "gap", "distance0", "distanceFar", "count0", "countPast"];

describe("expandLeafCopies and checkLeafCopies", () => {
  test("expanding arbitrary valid copies is the naive one-leaf-at-a-time expansion", () => {
    fc.assert(
      fc.property(copiesCases, ({ written, copies, leafCount }) => {
        checkLeafCopies(copies, written.length, leafCount, "specs", 3);
        const made = expandLeafCopies(written, copies);
        expect(made).toHaveLength(leafCount);
        expect(made).toEqual(naiveExpand(written, copies));
      }),
      EXPAND,
    );
  });

  test("each kind of bad copy is refused at its path, with its code", () => {
    const faulty = fc.tuple(
      copiesCases.filter((c) => c.copies.length > 0),
      fc.nat(),
      fc.constantFrom<Fault>(...FAULTS, "short"),
      fc.integer({ min: 1, max: 1000 }),
    );
    fc.assert(
      fc.property(faulty, ([{ written, copies, leafCount, before }, pick, fault, k]) => {
        const c = pick % before.length;
        const { read, made } = before[c];
        const bad = copies.slice();
        const at = `specs.leaf_copies`;
        let count = leafCount;
        let want: [string, string];
        switch (fault) {
          case "numbers":
            bad.splice(3 * c + (k % 3), 1 + (k % 2)); // one or two numbers fewer
            want = [at, "invalid-tree"];
            break;
          case "gap":
            bad[3 * c] = written.length - read + k;
            want = [`${at}[${3 * c}]`, "invalid-tree"];
            break;
          case "distance0":
            bad[3 * c + 1] = 0;
            want = [`${at}[${3 * c + 1}]`, "forward-reference"];
            break;
          case "distanceFar":
            bad[3 * c + 1] = made + bad[3 * c] + k;
            want = [`${at}[${3 * c + 1}]`, "reference-out-of-range"];
            break;
          case "count0":
            bad[3 * c + 2] = 0;
            want = [`${at}[${3 * c + 2}]`, "invalid-tree"];
            break;
          case "countPast":
            bad[3 * c + 2] = leafCount + k;
            want = [`${at}[${3 * c + 2}]`, "invalid-tree"];
            break;
          case "short":
            count = leafCount + k;
            want = ["specs.leaves", "invalid-tree"];
            break;
        }
        expect(refusal(bad, written.length, count)).toEqual(want);
        // Under a header of 1.2 any copy is refused first, whatever is wrong with it.
        expect(refusal(bad, written.length, count, 2)).toEqual([at, "unsupported-version"]);
        expect(refusal(copies, written.length, leafCount, 2)).toEqual([at, "unsupported-version"]);
      }),
      REFUSE,
    );
  });

  test("a tree of fewer leaves than the copies make is refused at the copy that passes it", () => {
    // One written leaf, then copies of 3 and 4: a tree of 5 is passed at the second copy.
    expect(refusal([1, 1, 3, 0, 2, 4], 1, 5)).toEqual(["specs.leaf_copies[5]", "invalid-tree"]);
    expect(refusal([1, 1, 3, 0, 2, 4], 1, 8)).toEqual("accepted");
    // Written leaves left after the copies count too: passed at the first copy.
    expect(refusal([1, 1, 3], 3, 5)).toEqual(["specs.leaf_copies[2]", "invalid-tree"]);
    expect(refusal([1, 1, 3], 3, 6)).toEqual("accepted");
  });

  test("without copies the written leaves are the tree's, under any header", () => {
    expect(refusal([], 7, 7, 0)).toEqual("accepted");
    expect(refusal([], 7, 9, 2)).toEqual(["specs.leaves", "invalid-tree"]);
  });
});

// ---------------------------------------------------------------------------------------------
// Through encodeSpecs and decodeSpecs.

/** 16 distinct specs: four shapes, each under four shardings of a 2x4 mesh. */
function sixteenSpecs(): ShapeDtypeStruct[] {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
  const specs = [new P("x", "y"), new P("y", "x"), new P("x"), new P()];
  return range(16).map(
    (i) =>
      new ShapeDtypeStruct(
        [8, 4 * (1 + (i >> 2))],
        "float32",
        new NamedSharding(mesh, specs[i & 3]),
      ),
  );
}

describe("encodeSpecs", () => {
  const sixteen = sixteenSpecs();
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(
    range(10_000).map((i) => sixteen[i % 16]),
  );

  test("writes a 10,000-leaf cycle of 16 specs as copies for 1.3, and plainly for 1.2", () => {
    const latest = encodeSpecs(treedef, leaves);
    const old = encodeSpecs(treedef, leaves, { targetMinorVersion: 2 });
    const a = SpecsPayload.decode(latest);
    const b = SpecsPayload.decode(old);
    expect(a.header?.minorVersion).toBe(SCHEMA_MINOR_VERSION);
    expect(b.header?.minorVersion).toBe(2);
    expect(a.specs?.leaves).toHaveLength(16);
    expect(a.specs?.leafCopies).toEqual([16, 16, 9984]);
    expect(b.specs?.leafCopies).toEqual([]);
    expect(b.specs?.leaves).toHaveLength(10_000);
    expect(expandLeafCopies(a.specs?.leaves ?? [], a.specs?.leafCopies ?? [])).toEqual(
      b.specs?.leaves,
    );
    expect(latest.length).toBeLessThan(old.length - 9000);
    const fromLatest = decodeSpecs(latest);
    const fromOld = decodeSpecs(old);
    expect(fromLatest.treedef).toEqual(treedef);
    expect(fromOld.treedef).toEqual(treedef);
    // Each leaf is its table entry's one object, copies included: the first 16 are the specs,
    // and every leaf is the one of its place in the cycle.
    for (const got of [fromLatest.leaves, fromOld.leaves]) {
      expect(got).toHaveLength(10_000);
      expect(got.slice(0, 16)).toEqual(sixteen);
      expect(new Set(got).size).toBe(16);
      expect(got.every((leaf, i) => leaf === got[i % 16])).toBe(true);
    }
  });

  /** The 10,000-leaf payload's message, changed by `edit`, decoded: its DecodeError. */
  function refusedWith(edit: (m: SpecsPayload) => void): [string, string] | "accepted" {
    const message = SpecsPayload.decode(encodeSpecs(treedef, leaves));
    edit(message);
    try {
      decodeSpecs(SpecsPayload.encode(message).finish());
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError);
      return [(e as DecodeError).path, (e as DecodeError).code];
    }
    return "accepted";
  }

  test("decodeSpecs refuses bad copies at their paths", () => {
    const specs = (m: SpecsPayload) => m.specs as NonNullable<SpecsPayload["specs"]>;
    expect(refusedWith(() => {})).toBe("accepted");
    expect(refusedWith((m) => specs(m).leafCopies.push(1))).toEqual([
      "specs.leaf_copies",
      "invalid-tree",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[0] = 17))).toEqual([
      "specs.leaf_copies[0]",
      "invalid-tree",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[1] = 0))).toEqual([
      "specs.leaf_copies[1]",
      "forward-reference",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[1] = 17))).toEqual([
      "specs.leaf_copies[1]",
      "reference-out-of-range",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[2] = 0))).toEqual([
      "specs.leaf_copies[2]",
      "invalid-tree",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[2] = 9985))).toEqual([
      "specs.leaf_copies[2]",
      "invalid-tree",
    ]);
    expect(refusedWith((m) => (specs(m).leafCopies[2] = 9983))).toEqual([
      "specs.leaves",
      "invalid-tree",
    ]);
    // One written leaf more makes up for one copied leaf fewer.
    expect(
      refusedWith((m) => {
        specs(m).leafCopies[2] = 9983;
        specs(m).leaves.push(specs(m).leaves[0]);
      }),
    ).toBe("accepted");
    const minor2 = (m: SpecsPayload) => {
      if (m.header) m.header.minorVersion = 2;
    };
    expect(refusedWith(minor2)).toEqual(["specs.leaf_copies", "unsupported-version"]);
  });

  test("decodes the committed leaf_copies_1_3 vector to its tree, copies made", () => {
    const bytes = new Uint8Array(readFileSync(join(VECTORS, "leaf_copies_1_3.bin")));
    const message = SpecsPayload.decode(bytes);
    expect(message.specs?.leafCopies.length).toBeGreaterThanOrEqual(6);
    const f32 = (n: number) => new ShapeDtypeStruct([n], "float32");
    const cycle = range(5).map((i) => f32(i + 1));
    const tree = {
      cycle: range(6).flatMap(() => cycle),
      tail: [f32(8), ...cycle.slice(0, 4), f32(9)],
    };
    const want = treeFlatten<ShapeDtypeStruct>(tree);
    const got = decodeSpecs(bytes);
    expect(got.treedef).toEqual(want.treedef);
    expect(got.leaves).toEqual(want.leaves);
  });
});

// ---------------------------------------------------------------------------------------------
// The same copies from both languages: test/vectors/leaf_copies.json.

/** `n` references over `alphabet` values, about `repeat` of them runs repeated from earlier. */
function seededList(seed: number, n: number, alphabet: number[], repeat: number): number[] {
  const random = seededRandom(seed);
  const pick = (k: number) => Math.floor(random() * k);
  const out: number[] = [];
  while (out.length < n) {
    if (out.length > 0 && random() < repeat) {
      let from = out.length - 1 - pick(Math.min(out.length, 1 + pick(400)));
      const length = 1 + pick(random() < 0.2 ? 60 : 12);
      for (let k = 0; k < length && out.length < n; k++) out.push(out[from++]);
    } else {
      out.push(alphabet[pick(alphabet.length)]);
    }
  }
  return out;
}

/** Reference lists, each written as its leaves and copies by both languages. */
const REF_LISTS: [string, number[]][] = (() => {
  const filler = (n: number, start = 1000) => range(n, start);
  const bytes2 = [200, 201, 202, 203, 204, 205];
  const bytes3 = [16_384, 16_385, 20_000, 2_097_151];
  return [
    ["empty", []],
    ["one", [7]],
    ["two", [1, 2]],
    ["three equal", [3, 3, 3]],
    ["four equal", [3, 3, 3, 3]],
    ["five distinct", [1, 2, 3, 4, 5]],
    ["five equal", [5, 5, 5, 5, 5]],
    ["six equal", [0, 0, 0, 0, 0, 0]],
    ["eight: one cycle of four twice", [1, 2, 3, 4, 1, 2, 3, 4]],
    ["all equal x 1000", Array(1000).fill(9)],
    ["cycle of 16 x 625", range(10_000).map((i) => i % 16)],
    ["period 2", range(100).map((i) => 1 + (i % 2))],
    ["period 3, large refs", range(60).map((i) => 300 + (i % 3))],
    ["run longer than the list so far", [9, 8, 7, 6, ...range(40).map((i) => [9, 8, 7, 6][i % 4])]],
    [
      "cycle of 5 then a break then the cycle",
      [...range(35).map((i) => i % 5), 99, ...range(12).map((i) => i % 5)],
    ],
    ["three refs repeat, never four", [1, 2, 3, 7, 1, 2, 3, 8, 1, 2, 3, 9]],
    ["a run that agrees to the end", [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]],
    ["a copy then fewer than four leaves", [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7, 8]],
    [
      "the latest run seen is shorter than an older one",
      [...range(8, 1), ...filler(200), 1, 2, 3, 4, 9, ...Array(8).fill(77), ...range(8, 1)],
    ],
    [
      "the latest run seen is shorter, close by",
      [...bytes2, 1, ...bytes2.slice(0, 4), 2, ...bytes2.slice(0, 4), 3, ...bytes2],
    ],
    [
      "runs inside a copy are not seen",
      [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 5, 6, 7, 8, 0, 3, 4, 5, 6],
    ],
    ["two-byte refs copied four at a time", [...bytes2.slice(0, 4), 1, ...bytes2.slice(0, 4)]],
    ["three-byte refs copied four at a time", [...bytes3, 0, ...bytes3, 1, ...bytes3]],
    [
      "five-byte refs",
      [0xffff_ffff, 0x8000_0000, 1, 0xffff_ffff, 0xffff_ffff, 0x8000_0000, 1, 0xffff_ffff],
    ],
    ["far back, small refs: four not worth it", [1, 2, 3, 4, ...filler(200), 1, 2, 3, 4]],
    ["far back, small refs: five not worth it", [1, 2, 3, 4, 5, ...filler(200), 1, 2, 3, 4, 5]],
    ["far back, small refs: six not worth it", [...range(6, 1), ...filler(200), ...range(6, 1)]],
    ["far back, small refs: eight worth it", [...range(8, 1), ...filler(200), ...range(8, 1)]],
    [
      "far back, two-byte refs: four worth it",
      [...bytes2.slice(0, 4), ...filler(200), ...bytes2.slice(0, 4)],
    ],
    [
      "gap of 128 after a copy, four not worth it",
      [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, ...filler(128), 1, 2, 3, 4, 5],
    ],
    [
      "gap of 128 after a copy, six worth it",
      [...range(6, 1), ...range(6, 1), ...filler(128), ...range(6, 1)],
    ],
    ["a first copy of four pays for the field: not worth it", [1, 2, 3, 4, 1, 2, 3, 4]],
    ["gap and distance of 127: six worth it", [...range(6, 1), ...filler(121), ...range(6, 1)]],
    ["gap and distance of 128: six not worth it", [...range(6, 1), ...filler(122), ...range(6, 1)]],
    [
      "a copy's own start is seen",
      [...filler(127, 500), 500, 501, 502, 503, 504, ...filler(123, 500), 627, 628, 629, 630],
    ],
    [
      "a copy of four from each of two places",
      [1, 2, 3, 4, 10, 11, 12, 13, 1, 2, 3, 4, 10, 11, 12, 13],
    ],
    ["alternating blocks", range(80).map((i) => Math.floor(i / 4) % 2)],
    ["zeros and max", range(40).map((i) => (i % 3 === 0 ? 0 : 0xffff_ffff))],
    ["a cycle whose period is 200", range(1000).map((i) => (i * 7) % 200)],
    ["seeded: two refs", seededList(1, 300, [0, 1], 0.3)],
    ["seeded: eight refs, repeats", seededList(2, 500, range(8), 0.5)],
    ["seeded: 64 refs, few repeats", seededList(3, 800, range(64), 0.1)],
    ["seeded: 500 refs, repeats", seededList(4, 2000, range(500), 0.4)],
    ["seeded: two-byte refs", seededList(5, 600, range(40, 140).concat(range(20, 16_000)), 0.5)],
    ["seeded: three-byte refs", seededList(6, 600, range(30, 16_384), 0.5)],
    ["seeded: mostly repeats", seededList(7, 3000, range(16), 0.9)],
    [
      "seeded: mixed sizes",
      seededList(8, 1500, [0, 1, 127, 128, 16_383, 16_384, 0xffff_ffff], 0.6),
    ],
  ];
})();

interface LeafCopiesJson {
  name: string;
  refs: number[];
  leaves: number[];
  copies: number[];
}

function entryOf([name, refs]: [string, number[]]): LeafCopiesJson {
  const { leaves, copies } = findLeafCopies(refs);
  return { name, refs, leaves, copies };
}

describe("test/vectors/leaf_copies.json", () => {
  if (UPDATE) {
    test("is written", () => {
      // One entry a line: the long lists stay readable in a diff.
      const lines = REF_LISTS.map(entryOf).map((e) => `  ${JSON.stringify(e)}`);
      writeFileSync(LEAF_COPIES_JSON, `[\n${lines.join(",\n")}\n]\n`);
    });
  }

  test("holds the copies findLeafCopies writes, which expand to their references", () => {
    expect(existsSync(LEAF_COPIES_JSON)).toBe(true);
    const committed: LeafCopiesJson[] = JSON.parse(readFileSync(LEAF_COPIES_JSON, "utf8"));
    expect(committed).toEqual(REF_LISTS.map(entryOf));
    for (const { refs, leaves, copies } of committed) {
      expect(expandLeafCopies(leaves, copies)).toEqual(refs);
      checkLeafCopies(copies, leaves.length, refs.length, "specs", 3);
    }
    // Enough of them copy, and some copy across an overlap (a cycle longer than its source).
    expect(committed.filter((c) => c.copies.length > 0).length).toBeGreaterThan(25);
    expect(
      committed.filter((c) => triples(c.copies).some(([, d, n]) => n > d)).length,
    ).toBeGreaterThan(5);
    expect(
      committed.filter((c) => c.refs.length > 4 && c.copies.length === 0).length,
    ).toBeGreaterThan(3);
  });
});
