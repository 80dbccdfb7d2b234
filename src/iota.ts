/**
 * XLA's iota form: arange(prod(reshapeDims)).reshape(reshapeDims).transpose(transposePerm).flatten().
 * A regular device order then costs a few integers instead of one id per device.
 */
export interface Iota {
  readonly reshapeDims: readonly number[];
  readonly transposePerm: readonly number[];
}

/** Finds the unique iota form of `q`, or undefined; the algorithm is in docs/wire-format.md. */
export function findIota(q: ArrayLike<number>): Iota | undefined {
  if (q.length === 0) return undefined;
  if (q.length === 1) return q[0] === 0 ? { reshapeDims: [1], transposePerm: [0] } : undefined;
  const innerFirst: { size: number; stride: number }[] = [];
  let current: ArrayLike<number> = q;
  while (current.length > 1) {
    const stride = current[1] - current[0];
    if (stride <= 0) return undefined;
    let size = 2;
    while (size < current.length && current[size] === current[0] + size * stride) size++;
    if (current.length % size !== 0) return undefined;
    const next: number[] = [];
    for (let block = 0; block < current.length; block += size) {
      const base = current[block];
      for (let j = 1; j < size; j++) {
        if (current[block + j] !== base + j * stride) return undefined;
      }
      next.push(base);
    }
    innerFirst.push({ size, stride });
    current = next;
  }
  if (current[0] !== 0) return undefined;
  const output = innerFirst.reverse();
  const byStride = [...output].sort((a, b) => b.stride - a.stride);
  let expected = 1;
  for (let i = byStride.length - 1; i >= 0; i--) {
    if (byStride[i].stride !== expected) return undefined;
    expected *= byStride[i].size;
  }
  const iota = {
    reshapeDims: byStride.map((d) => d.size),
    transposePerm: output.map((d) => byStride.indexOf(d)),
  };
  return sameValues(materializeIota(iota), q) ? iota : undefined;
}

/** The number of elements an iota holds, or Infinity when it passes 2^53. */
export function iotaSize(reshapeDims: readonly number[]): number {
  let size = 1;
  for (const d of reshapeDims) size *= d;
  return Number.isSafeInteger(size) ? size : Number.POSITIVE_INFINITY;
}

/** Writes out an iota's elements; the caller has checked its size and permutation. */
export function materializeIota(iota: Iota, offset = 0): Int32Array {
  const { reshapeDims, transposePerm } = iota;
  const rank = reshapeDims.length;
  const out = new Int32Array(iotaSize(reshapeDims));
  if (out.length === 0) return out;
  const rowMajor = new Array<number>(rank);
  for (let i = rank - 1, s = 1; i >= 0; i--) {
    rowMajor[i] = s;
    s *= reshapeDims[i];
  }
  const sizes = transposePerm.map((p) => reshapeDims[p]);
  const strides = transposePerm.map((p) => rowMajor[p]);
  const digits = new Array<number>(rank).fill(0);
  let value = offset;
  for (let i = 0; i < out.length; i++) {
    out[i] = value;
    for (let k = rank - 1; k >= 0; k--) {
      if (++digits[k] < sizes[k]) {
        value += strides[k];
        break;
      }
      value -= strides[k] * (sizes[k] - 1);
      digits[k] = 0;
    }
  }
  return out;
}

function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
