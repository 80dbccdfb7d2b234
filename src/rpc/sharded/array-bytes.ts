import { DecodeError } from "../../errors";
import type { DTypeName, ShapeDtypeStruct } from "../../model/shape-dtype-struct";

/**
 * Bytes per element on the wire: NumPy's itemsize, so sub-byte types (int2, int4, float4)
 * take one byte each, and float0 none. Strings have no fixed-size form; a PRNG key travels as
 * its uint32 key data.
 */
const ITEMSIZE: Record<Exclude<DTypeName, "string" | "key">, number> = {
  bool: 1,
  int2: 1,
  int4: 1,
  int8: 1,
  int16: 2,
  int32: 4,
  int64: 8,
  uint2: 1,
  uint4: 1,
  uint8: 1,
  uint16: 2,
  uint32: 4,
  uint64: 8,
  float16: 2,
  float32: 4,
  float64: 8,
  bfloat16: 2,
  complex64: 8,
  complex128: 16,
  float8_e3m4: 1,
  float8_e4m3: 1,
  float8_e4m3fn: 1,
  float8_e4m3fnuz: 1,
  float8_e4m3b11fnuz: 1,
  float8_e5m2: 1,
  float8_e5m2fnuz: 1,
  float8_e8m0fnu: 1,
  float4_e2m1fn: 1,
  float0: 0,
  int1: 1,
  uint1: 1,
  float6_e2m3fn: 1,
  float6_e3m2fn: 1,
  float8_e5m3fnu: 1,
};

/**
 * The bytes of one element on the wire (a PRNG key's uint32 key data: `keyShape` words), or
 * undefined for strings. Elements lie in row-major order, so a shard of a key array is the
 * same slice of its key data.
 */
export function elementByteLength(spec: ShapeDtypeStruct): number | undefined {
  if (spec.dtype === "string") return undefined;
  if (spec.dtype === "key") {
    const keyWords = spec.keyType?.keyShape.reduce((n, d) => n * d, 1);
    return keyWords === undefined ? undefined : 4 * keyWords;
  }
  return ITEMSIZE[spec.dtype];
}

/** The byte length of an array's raw little-endian data, or undefined for strings. */
export function arrayByteLength(spec: ShapeDtypeStruct): number | undefined {
  const item = elementByteLength(spec);
  return item === undefined ? undefined : spec.shape.reduce((n, d) => n * d, item);
}

/** Like float32[8,4]. */
export function describeArray(spec: ShapeDtypeStruct): string {
  return `${spec.dtype}[${spec.shape.join(",")}]`;
}

/**
 * Checks that the worker sent one array of the right length per output leaf, and copies each
 * into its own buffer, so that typed-array views of it are aligned.
 */
export function checkOutputData(
  leaves: readonly ShapeDtypeStruct[],
  data: readonly Uint8Array[],
): Uint8Array[] {
  if (data.length !== leaves.length) {
    const detail = `${data.length} arrays for ${leaves.length} output leaves`;
    throw new DecodeError("outputs", "invalid-value", detail);
  }
  return data.map((bytes, i) => {
    const want = arrayByteLength(leaves[i]);
    if (want !== undefined && bytes.length !== want) {
      const detail = `${bytes.length} bytes, but a ${describeArray(leaves[i])} output needs ${want}`;
      throw new DecodeError(`outputs[${i}]`, "invalid-value", detail);
    }
    return new Uint8Array(bytes); // a copy: Buffer.slice would share (and misalign) the pool
  });
}
