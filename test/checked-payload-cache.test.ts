import {
  DecodeError,
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";

/**
 * Decoding the same bytes again reuses the checks made the first time (src/decode.ts): the
 * objects are lifted anew, and the limits and the agreed version still judge every decode.
 */

const mesh = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const spec = () =>
  new ShapeDtypeStruct([8, 4], "float32", new NamedSharding(mesh, new PartitionSpec("x", "y")));
const tree = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`layers.${i}.w`, spec()]));
const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
const bytes = encodeSpecs(treedef, leaves);

/** The DecodeError a decode throws; no error fails the test. */
function refusal(decode: () => unknown): DecodeError {
  try {
    decode();
  } catch (error) {
    if (error instanceof DecodeError) return error;
    throw error;
  }
  throw new Error("the payload decoded");
}

test("the same bytes decode to equal objects, lifted anew each time, and the same tree", () => {
  const first = decodeSpecs(bytes);
  const again = decodeSpecs(bytes.slice());
  expect(again.leaves.map((leaf) => leaf.key)).toEqual(first.leaves.map((leaf) => leaf.key));
  expect(again.leaves[0]).not.toBe(first.leaves[0]);
  expect(again.leaves[0].sharding).not.toBe(first.leaves[0].sharding);
  // Trees are immutable: one lifted tree serves every decode of its bytes, as in Python.
  expect(again.treedef).toBe(first.treedef);
});

test("bytes checked under looser limits are still refused under stricter ones", () => {
  decodeSpecs(bytes);
  const error = refusal(() => decodeSpecs(bytes, { limits: { maxTreeNodes: 5 } }));
  expect(error.code).toBe("limit-exceeded");
  decodeSpecs(bytes, { limits: { maxTreeNodes: 100 } });
});

test("bytes checked without an agreed version are still refused past one", () => {
  decodeSpecs(bytes);
  const error = refusal(() => decodeSpecs(bytes, { maxMinorVersion: 2 }));
  expect([error.path, error.code]).toEqual(["header.minor_version", "unsupported-version"]);
});
