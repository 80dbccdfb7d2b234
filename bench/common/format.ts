/** Number formatting for the report and the plot. */

export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1e6) return `${sig(bytes / 1e3)} KB`;
  if (bytes < 1e9) return `${sig(bytes / 1e6)} MB`;
  return `${sig(bytes / 1e9)} GB`;
}

export function formatMs(ms: number): string {
  if (ms < 0.001) return `${sig(ms * 1e6)} ns`;
  if (ms < 1) return `${sig(ms * 1000)} µs`;
  if (ms < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

/** How this size compares with the baseline's: "1/43" when smaller, "×95" when larger. */
export function sizeRatio(bytes: number, baseline: number): string {
  return bytes <= baseline ? `1/${sig(baseline / bytes)}` : `×${sig(bytes / baseline)}`;
}

/** How this time compares with the baseline's: "17× faster" or "1.2× slower". */
export function speedRatio(ms: number, baseline: number): string {
  return ms <= baseline ? `${sig(baseline / ms)}× faster` : `${sig(ms / baseline)}× slower`;
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** Three significant digits, no exponent, no trailing zeros. */
export function sig(x: number): string {
  if (x === 0 || !Number.isFinite(x)) return String(x);
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x))));
  return Number(x.toFixed(digits)).toLocaleString("en-US", { maximumFractionDigits: digits });
}
