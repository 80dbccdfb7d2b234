import { DeviceList as DeviceListMsg } from "../gen/ts/colocated/v1/table";
import { findIota, materializeIota } from "../src";
import { lowerDeviceIds } from "../src/entries/device-list";
import { range } from "./fixtures";

/** numpy's arange(prod(dims)).reshape(dims).transpose(perm).flatten(), written plainly. */
function transposed(dims: number[], perm: number[]): number[] {
  const out: number[] = [];
  const strides = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
  const outDims = perm.map((p) => dims[p]);
  const walk = (k: number, value: number) => {
    if (k === perm.length) return void out.push(value);
    for (let i = 0; i < outDims[k]; i++) walk(k + 1, value + i * strides[perm[k]]);
  };
  walk(0, 0);
  return out;
}

describe("iota", () => {
  test("materializes XLA's transposed arange", () => {
    expect(Array.from(materializeIota({ reshapeDims: [2, 3], transposePerm: [1, 0] }))).toEqual([
      0, 3, 1, 4, 2, 5,
    ]);
    expect(
      Array.from(materializeIota({ reshapeDims: [4, 2, 3], transposePerm: [2, 0, 1] }, 10)),
    ).toEqual(transposed([4, 2, 3], [2, 0, 1]).map((v) => v + 10));
  });

  test("finds the form of every transposition of a 3-D arange", () => {
    const perms = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ];
    for (const perm of perms) {
      const ids = transposed([2, 3, 4], perm);
      const iota = findIota(ids);
      expect(iota).toBeDefined();
      expect(Array.from(materializeIota(iota!))).toEqual(ids);
    }
  });

  test("merges adjacent dims, so the form is unique", () => {
    expect(findIota(range(8))).toEqual({ reshapeDims: [8], transposePerm: [0] });
    expect(findIota(transposed([2, 3, 4], [1, 0, 2]))).toEqual({
      reshapeDims: [2, 3, 4],
      transposePerm: [1, 0, 2],
    });
    expect(findIota(transposed([2, 3, 4], [0, 2, 1]))).toEqual({
      reshapeDims: [2, 3, 4],
      transposePerm: [0, 2, 1],
    });
    expect(findIota(transposed([2, 3, 4], [1, 2, 0]))).toEqual({
      reshapeDims: [2, 12],
      transposePerm: [1, 0],
    });
    expect(findIota([0])).toEqual({ reshapeDims: [1], transposePerm: [0] });
  });

  test("refuses orders that are not an iota", () => {
    expect(findIota([1, 0, 2, 3])).toBeUndefined();
    expect(findIota([0, 1, 3, 2])).toBeUndefined();
    expect(findIota([0, 2, 4])).toBeUndefined();
    expect(findIota([0, 0])).toBeUndefined();
    expect(findIota([])).toBeUndefined();
  });
});

describe("device list forms", () => {
  const size = (ids: number[]) => DeviceListMsg.encode(lowerDeviceIds(ids)).finish().length;

  test("a regular list of 1,048,576 devices takes under 64 bytes", () => {
    const ids = range(1 << 20);
    expect(lowerDeviceIds(ids).ids?.$case).toBe("iota");
    expect(size(ids)).toBeLessThan(64);
    expect(size(transposed([256, 64, 64], [2, 0, 1]).map((v) => v + 4096))).toBeLessThan(64);
  });

  test("irregular lists take delta or plain, whichever is smaller", () => {
    const increasing = range(200).map((i) => 5000 + i * 3 + (i % 2));
    expect(lowerDeviceIds(increasing).ids?.$case).toBe("delta");
    const scattered = [7, 3, 1000, 2, 500, 9];
    expect(lowerDeviceIds(scattered).ids?.$case).toBe("plain");
    expect(lowerDeviceIds([]).ids).toEqual({ $case: "plain", value: { ids: [] } });
  });
});
