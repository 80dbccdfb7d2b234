import { DType } from "../../gen/ts/colocated/v1/table";

/** JAX's names for the element types the wire format carries, each with its stable enum number. */
const DTYPES = {
  bool: DType.D_TYPE_BOOL,
  int2: DType.D_TYPE_INT2,
  int4: DType.D_TYPE_INT4,
  int8: DType.D_TYPE_INT8,
  int16: DType.D_TYPE_INT16,
  int32: DType.D_TYPE_INT32,
  int64: DType.D_TYPE_INT64,
  uint2: DType.D_TYPE_UINT2,
  uint4: DType.D_TYPE_UINT4,
  uint8: DType.D_TYPE_UINT8,
  uint16: DType.D_TYPE_UINT16,
  uint32: DType.D_TYPE_UINT32,
  uint64: DType.D_TYPE_UINT64,
  float16: DType.D_TYPE_FLOAT16,
  float32: DType.D_TYPE_FLOAT32,
  float64: DType.D_TYPE_FLOAT64,
  bfloat16: DType.D_TYPE_BFLOAT16,
  complex64: DType.D_TYPE_COMPLEX64,
  complex128: DType.D_TYPE_COMPLEX128,
  float8_e3m4: DType.D_TYPE_FLOAT8_E3M4,
  float8_e4m3: DType.D_TYPE_FLOAT8_E4M3,
  float8_e4m3fn: DType.D_TYPE_FLOAT8_E4M3FN,
  float8_e4m3fnuz: DType.D_TYPE_FLOAT8_E4M3FNUZ,
  float8_e4m3b11fnuz: DType.D_TYPE_FLOAT8_E4M3B11FNUZ,
  float8_e5m2: DType.D_TYPE_FLOAT8_E5M2,
  float8_e5m2fnuz: DType.D_TYPE_FLOAT8_E5M2FNUZ,
  float8_e8m0fnu: DType.D_TYPE_FLOAT8_E8M0FNU,
  float4_e2m1fn: DType.D_TYPE_FLOAT4_E2M1FN,
  string: DType.D_TYPE_STRING,
} as const;

/** A dtype by its JAX name, such as "float32" or "bfloat16". */
export type DTypeName = keyof typeof DTYPES;

/** Every dtype name, in enum order. */
export const DTYPE_NAMES = Object.keys(DTYPES) as DTypeName[];

const NAME_BY_NUMBER = new Map<number, DTypeName>(DTYPE_NAMES.map((n) => [DTYPES[n], n]));

/** The wire enum of a dtype name, or undefined for a name JAX does not have. */
export function dtypeToWire(name: string): DType | undefined {
  return Object.hasOwn(DTYPES, name) ? DTYPES[name as DTypeName] : undefined;
}

/** The dtype name of a wire enum number, or undefined when it is unknown. */
export function dtypeFromWire(value: number): DTypeName | undefined {
  return NAME_BY_NUMBER.get(value);
}
