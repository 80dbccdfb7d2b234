import type { Specs } from "../src";
import { range } from "./fixtures";

/** A float32 array's bytes as floats, without a copy. */
export function floats(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
}

/**
 * Checks the outputs of colocated_wire.examples.summarize for x, a float32 [8, 4] given as
 * `x`: its five outputs' dtypes and values, computed here.
 */
export function expectSummarized(x: Float32Array, outputs: Specs, data: Uint8Array[]): void {
  expect(outputs.leaves.map((l) => l.dtype)).toEqual([
    "int32",
    "float32",
    "bool",
    "float32",
    "float32",
  ]);
  expect(new Int32Array(data[0].buffer)[0]).toBe(x.filter((v) => v > 0).length);
  expect(floats(data[1])).toEqual(x.map((v) => v * 2));
  expect(Array.from(data[2])).toEqual(Array.from(x, (v) => (v > 0 ? 1 : 0)));
  expect(floats(data[3])).toEqual(
    Float32Array.from(range(8), (r) => x.slice(4 * r, 4 * r + 4).reduce((a, b) => a + b)),
  );
  expect(floats(data[4])).toEqual(x.map((v) => v + 0.5));
}
