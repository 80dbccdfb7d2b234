import fc from "fast-check";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { DecodeError, decodeSpecs, encodeSpecs, ShapeDtypeStruct, treeFlatten } from "../src";
import { compareCodePoints } from "../src/model/value-key";

/** The front-coded key pool (1.1) read back: keys, their order, and what is refused where. */

const leaf = () => new ShapeDtypeStruct([1], "float32");
const utf8 = new TextEncoder();

/** A 1.1 payload of one dict of `keys` (sorted as JAX sorts them), its pool re-coded by `code`. */
function payload(keys: string[], code?: (keys: string[]) => [Uint8Array, number[]]): Uint8Array {
  const tree = Object.fromEntries(keys.map((k) => [k, leaf()]));
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  const message = SpecsPayload.decode(encodeSpecs(treedef, leaves, { targetMinorVersion: 1 }));
  if (code) {
    const t = message.specs!.treedef!;
    [t.keyText, t.keySizes] = code(keys);
  }
  return SpecsPayload.encode(message).finish();
}

/** Every key written whole, sharing nothing: a writer may share less than the keys have in common. */
const unshared = (keys: string[]): [Uint8Array, number[]] => [
  utf8.encode(keys.join("")),
  keys.flatMap((k) => [0, utf8.encode(k).length]),
];

function decodeError(bytes: Uint8Array): DecodeError {
  try {
    decodeSpecs(bytes);
  } catch (error) {
    if (error instanceof DecodeError) return error;
    throw error;
  }
  throw new Error("the payload decoded");
}

describe("the front-coded key pool", () => {
  const dotted = ["model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight"]
    .concat(["model.layers.1.mlp.up_proj.weight", "model.norm.weight", "é.ü", "z😀"])
    .sort(compareCodePoints);

  test("ASCII and other keys come back as written, in order", () => {
    const back = decodeSpecs(payload(dotted));
    expect(back.treedef.root.kind === "dict" && back.treedef.root.keys).toEqual(dotted);
  });

  test("keys that share less than they have in common are still known to be in order", () => {
    const back = decodeSpecs(payload(dotted, unshared));
    expect(back.treedef.root.kind === "dict" && back.treedef.root.keys).toEqual(dotted);
  });

  test("keys out of order are refused, whether or not their prefixes are shared", () => {
    const swapped = (keys: string[]): [Uint8Array, number[]] =>
      unshared([keys[1], keys[0], ...keys.slice(2)]);
    const error = decodeError(payload(dotted, swapped));
    expect([error.path, error.code]).toEqual(["specs.treedef.dict_keys[1]", "invalid-tree"]);
  });

  test("a key that is not UTF-8 is refused before a size after it, as Python refuses it", () => {
    const broken = (keys: string[]): [Uint8Array, number[]] => {
      const [text, sizes] = unshared(keys);
      const at = sizes[1]; // the second key's first byte
      const bad = new Uint8Array(text.length + 1);
      bad.set(text.subarray(0, at));
      bad[at] = 0xff;
      bad.set(text.subarray(at), at + 1);
      sizes[3] += 1;
      sizes[sizes.length - 1] += 100; // the last key now runs past key_text
      return [bad, sizes];
    };
    const error = decodeError(payload(dotted, broken));
    expect([error.path, error.code]).toEqual(["specs.treedef.key_text", "invalid-value"]);
    expect(error.detail).toBe("key 1 is not UTF-8");
  });
});

describe("a pool read after another", () => {
  // A trie's pool, then a front-coded pool whose text holds what the trie's numbers look like.
  function pools(): [Uint8Array, Uint8Array] {
    const message = () => SpecsPayload.decode(payload(["a"]));
    const trie = message();
    Object.assign(trie.specs!.treedef!, {
      keyText: new Uint8Array(0),
      keySizes: [],
      keyTrie: { labelText: utf8.encode("a"), labelSizes: [0, 1], nodes: [0, 2] },
    });
    trie.header!.minorVersion = 3;
    const coded = message();
    Object.assign(coded.specs!.treedef!, { keyText: utf8.encode("a 0,1"), keySizes: [0, 2] });
    coded.header!.minorVersion = 3;
    return [SpecsPayload.encode(trie).finish(), SpecsPayload.encode(coded).finish()];
  }

  test("is judged on its own form and bytes", () => {
    const [trie, coded] = pools();
    const root = decodeSpecs(trie).treedef.root;
    expect(root.kind === "dict" && root.keys).toEqual(["a"]);
    expect(decodeError(coded).path).toBe("specs.treedef.key_text");
  });
});

describe("compareCodePoints", () => {
  /** Python's order of str: code point by code point (a lone surrogate is its own). */
  function reference(a: string, b: string): number {
    const pa = Array.from(a, (c) => c.codePointAt(0) as number);
    const pb = Array.from(b, (c) => c.codePointAt(0) as number);
    for (let i = 0; i < Math.min(pa.length, pb.length); i++)
      if (pa[i] !== pb[i]) return pa[i] - pb[i];
    return pa.length - pb.length;
  }

  test("orders as Python does, surrogates and their neighbours included", () => {
    const unit = fc.constantFrom(0x41, 0x7a, 0xe9, 0xd7ff, 0xd83d, 0xde00, 0xdfff, 0xe000, 0xffff);
    const text = fc.array(unit, { maxLength: 6 }).map((u) => String.fromCharCode(...u));
    fc.assert(
      fc.property(text, text, fc.string({ maxLength: 3 }), (a, b, prefix) => {
        const got = Math.sign(compareCodePoints(prefix + a, prefix + b));
        expect(got).toBe(Math.sign(reference(prefix + a, prefix + b)));
      }),
      { numRuns: 3000 },
    );
  });
});
