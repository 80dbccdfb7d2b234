/**
 * XLA's iota form: arange(prod(reshapeDims)).reshape(reshapeDims).transpose(transposePerm).flatten().
 * A regular device order then costs a few integers instead of one id per device.
 */
export interface Iota {
  readonly reshapeDims: readonly number[];
  readonly transposePerm: readonly number[];
}

/**
 * Finds the unique iota form of `q - offset`, or undefined; the algorithm is in
 * docs/wire-format.md. The dims are read off the runs at the start of `q`, then one pass over
 * `q` checks every element against them, so nothing is allocated per element.
 */
export function findIota(q: ArrayLike<number>, offset = 0): Iota | undefined {
  const n = q.length;
  if (n === 0) return undefined;
  if (n === 1) return q[0] - offset === 0 ? { reshapeDims: [1], transposePerm: [0] } : undefined;
  // Innermost level first: level k's elements are q[0], q[step], q[2 * step], ...
  const sizes: number[] = [];
  const strides: number[] = [];
  for (let step = 1, count = n; count > 1; ) {
    const first = q[0];
    const stride = q[step] - first;
    if (!(stride > 0)) return undefined;
    let size = 2;
    while (size < count && q[size * step] === first + size * stride) size++;
    if (count % size !== 0) return undefined;
    sizes.push(size);
    strides.push(stride);
    step *= size;
    count /= size;
  }
  if (q[0] - offset !== 0) return undefined;
  const output = sizes.map((size, k) => ({ size, stride: strides[k] })).reverse();
  const byStride = [...output].sort((a, b) => b.stride - a.stride);
  let expected = 1;
  for (let i = byStride.length - 1; i >= 0; i--) {
    if (byStride[i].stride !== expected) return undefined;
    expected *= byStride[i].size;
  }
  if (!followsLevels(q, offset, sizes, strides)) return undefined;
  return {
    reshapeDims: byStride.map((d) => d.size),
    transposePerm: output.map((d) => byStride.indexOf(d)),
  };
}

/** The number of elements an iota holds, or Infinity when it passes 2^53. */
export function iotaSize(reshapeDims: readonly number[]): number {
  let size = 1;
  for (const d of reshapeDims) size *= d;
  return Number.isSafeInteger(size) ? size : Number.POSITIVE_INFINITY;
}

/** Writes out an iota's elements; the caller has checked its size and permutation. */
export function materializeIota(iota: Iota, offset = 0): Int32Array {
  const out = new Int32Array(iotaSize(iota.reshapeDims));
  if (out.length === 0) return out;
  const { sizes, strides } = iotaLevels(iota);
  const inner = sizes[0];
  const step = strides[0];
  const digits = new Array<number>(sizes.length).fill(0);
  for (let i = 0, base = offset; i < out.length; ) {
    for (let j = 0, value = base; j < inner; j++, value += step) out[i++] = value;
    base = nextBase(base, digits, sizes, strides);
  }
  return out;
}

/**
 * An iota's levels, innermost first: the output walks level 0 fastest, each step adding its
 * stride. A rank-0 iota is one level of size 1.
 */
export function iotaLevels(iota: Iota): { sizes: number[]; strides: number[] } {
  const { reshapeDims, transposePerm } = iota;
  const rank = reshapeDims.length;
  if (rank === 0) return { sizes: [1], strides: [1] };
  const rowMajor = new Array<number>(rank);
  for (let i = rank - 1, s = 1; i >= 0; i--) {
    rowMajor[i] = s;
    s *= reshapeDims[i];
  }
  const sizes: number[] = [];
  const strides: number[] = [];
  for (let k = rank - 1; k >= 0; k--) {
    sizes.push(reshapeDims[transposePerm[k]]);
    strides.push(rowMajor[transposePerm[k]]);
  }
  return { sizes, strides };
}

/** Whether q is offset + the levels' walk, element by element, in one pass. */
function followsLevels(
  q: ArrayLike<number>,
  offset: number,
  sizes: readonly number[],
  strides: readonly number[],
): boolean {
  const inner = sizes[0];
  const step = strides[0];
  const digits = new Array<number>(sizes.length).fill(0);
  for (let i = 0, base = offset; i < q.length; ) {
    for (let j = 0, value = base; j < inner; j++, value += step) if (q[i++] !== value) return false;
    base = nextBase(base, digits, sizes, strides);
  }
  return true;
}

/** Advances the odometer of the levels above the innermost; returns the next block's first value. */
function nextBase(
  base: number,
  digits: number[],
  sizes: readonly number[],
  strides: readonly number[],
): number {
  for (let k = 1; k < sizes.length; k++) {
    if (++digits[k] < sizes[k]) return base + strides[k];
    base -= strides[k] * (sizes[k] - 1);
    digits[k] = 0;
  }
  return base;
}
