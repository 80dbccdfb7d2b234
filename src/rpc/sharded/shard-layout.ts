import type { ShardIndex } from "../../shard-indices";

/**
 * Where a shard's bytes live in its global array. The shard's bytes are its elements in
 * row-major order of the shard; in the global array (row-major too) they are runs of
 * contiguous bytes, one per row of the shard's outer dimensions, so a byte range of the
 * shard maps to a few slices of the global bytes, found without walking element by element.
 */
export class ShardLayout {
  /** The shard's size in bytes. */
  readonly byteLength: number;
  /** The bytes of one contiguous run in the global array. */
  private readonly runBytes: number;
  /** The outer dimensions (whose rows are the runs): their sizes and global byte strides. */
  private readonly outerSizes: number[];
  private readonly outerStrides: number[];
  /** The global byte offset of the first run. */
  private readonly base: number;

  constructor(shape: readonly number[], index: ShardIndex, itemBytes: number) {
    const rank = shape.length;
    const size = shape.map((_, d) => index.stop[d] - index.start[d]);
    const strides = new Array<number>(rank);
    for (let d = rank - 1, s = itemBytes; d >= 0; d--) {
      strides[d] = s;
      s *= shape[d];
    }
    // The innermost dimension the shard does not span whole; all after it are whole.
    let k = rank - 1;
    while (k >= 0 && size[k] === shape[k]) k--;
    this.runBytes = k < 0 ? itemBytes * shape.reduce((n, d) => n * d, 1) : size[k] * strides[k];
    this.outerSizes = size.slice(0, Math.max(k, 0));
    this.outerStrides = strides.slice(0, Math.max(k, 0));
    this.base = index.start.reduce((sum, s, d) => sum + s * strides[d], 0);
    this.byteLength = size.reduce((n, d) => n * d, itemBytes);
  }

  /** Copies `bytes`, the shard's bytes from `offset` on, into their places in `global`. */
  scatter(global: Uint8Array, offset: number, bytes: Uint8Array): void {
    if (this.outerSizes.length === 0) {
      global.set(bytes, this.base + offset); // one run: no pieces to find
      return;
    }
    this.forEachPiece(offset, bytes.length, (at, from, length) => {
      global.set(bytes.subarray(from, from + length), at);
    });
  }

  /**
   * The shard's bytes [offset, offset + length) read from `global`: a view when they are one
   * run, else a copy of just those bytes.
   */
  gather(global: Uint8Array, offset: number, length: number): Uint8Array {
    let view: Uint8Array | undefined;
    let out: Uint8Array | undefined;
    this.forEachPiece(offset, length, (at, into, size) => {
      if (size === length) {
        view = global.subarray(at, at + size);
        return;
      }
      out ??= new Uint8Array(length);
      out.set(global.subarray(at, at + size), into);
    });
    return view ?? out ?? new Uint8Array(0);
  }

  /** Copies the shard's bytes [offset, offset + length) from `global` into `into` at `at`. */
  copyTo(global: Uint8Array, offset: number, length: number, into: Uint8Array, at: number): void {
    if (this.outerSizes.length === 0) {
      const from = this.base + offset; // one run: no pieces to find
      into.set(global.subarray(from, from + length), at);
      return;
    }
    this.forEachPiece(offset, length, (from, within, size) => {
      into.set(global.subarray(from, from + size), at + within);
    });
  }

  /** Calls `piece(globalOffset, offsetInRange, length)` for each run the range touches. */
  private forEachPiece(
    offset: number,
    length: number,
    piece: (at: number, within: number, size: number) => void,
  ): void {
    if (length === 0) return;
    let run = Math.floor(offset / this.runBytes);
    let into = offset - run * this.runBytes;
    let done = 0;
    while (done < length) {
      const size = Math.min(this.runBytes - into, length - done);
      piece(this.runStart(run) + into, done, size);
      done += size;
      run++;
      into = 0;
    }
  }

  /** The global byte offset where run `run` starts. */
  private runStart(run: number): number {
    let at = this.base;
    for (let d = this.outerSizes.length - 1; d >= 0 && run > 0; d--) {
      const size = this.outerSizes[d];
      at += (run % size) * this.outerStrides[d];
      run = Math.floor(run / size);
    }
    return at;
  }
}
