import { formatBytes, formatMs, sig } from "./format";
import type { CaseResult, SideResult, TargetCheck } from "./results";

/** A few bytes: the most the (a) payload may grow each time S3's regular mesh doubles. */
export const FEW_BYTES = 4;

/** S4's log-log slope of size and time against leaves, from 1,000 leaves up, must be 1 ± this. */
export const LINEAR_SLACK = 0.15;

/** Checks the issue's targets against a run's results; a target with no data is not reported. */
export function checkTargets(cases: readonly CaseResult[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const r of cases.filter((r) => r.case.scenario === "S1" || r.case.scenario === "S2")) {
    checks.push(...s1s2Targets(r));
  }
  const s3 = s3Target(cases);
  if (s3) checks.push(s3);
  checks.push(...s4Targets(cases));
  return checks;
}

function s1s2Targets(r: CaseResult): TargetCheck[] {
  const { a, b, c } = r.sides;
  const id = r.case.id;
  const checks: TargetCheck[] = [];
  if (!c) return checks;
  if (a) {
    checks.push(
      atLeast(
        `${id}: payload at most 1/20 of (c)`,
        c.bytes / a.bytes,
        20,
        `${formatBytes(a.bytes)} vs ${formatBytes(c.bytes)}`,
      ),
      atLeast(
        `${id}: TS encode at least 10× faster than (c) serialize`,
        c.encode.medianMs / a.encode.medianMs,
        10,
        `${formatMs(a.encode.medianMs)} vs ${formatMs(c.encode.medianMs)}`,
      ),
      atLeast(
        `${id}: TS decode at least 10× faster than (c) deserialize`,
        c.decode.medianMs / a.decode.medianMs,
        10,
        `${formatMs(a.decode.medianMs)} vs ${formatMs(c.decode.medianMs)}`,
      ),
    );
  }
  if (b) {
    checks.push(
      atLeast(
        `${id}: Python lift at least as fast as (c) deserialize`,
        c.decode.medianMs / b.decode.medianMs,
        1,
        `${formatMs(b.decode.medianMs)} vs ${formatMs(c.decode.medianMs)}`,
      ),
    );
  }
  return checks;
}

/** A "better by at least `need`×" target, with by how much it is met or missed. */
function atLeast(target: string, got: number, need: number, numbers: string): TargetCheck {
  const met = got >= need;
  const margin = met
    ? `met with ${sig(got / need)}× to spare`
    : `missed: ${sig(got)}× of the ${need}× needed (${sig((1 - got / need) * 100)}% short)`;
  return { target, met, detail: `${numbers}: ${sig(got)}×, ${margin}` };
}

function s3Target(cases: readonly CaseResult[]): TargetCheck | undefined {
  const points = cases
    .filter((r) => r.case.scenario === "S3" && r.case.order === "regular" && r.sides.a)
    .map((r) => [r.case.devices, (r.sides.a as SideResult).bytes] as const)
    .sort((x, y) => x[0] - y[0]);
  if (points.length < 2) return undefined;
  const steps = points.slice(1).map(([n, bytes], i) => ({ n, delta: bytes - points[i][1] }));
  const worst = steps.reduce((w, s) => (s.delta > w.delta ? s : w));
  const met = worst.delta <= FEW_BYTES;
  const growth = steps.map((s) => `${s.delta >= 0 ? "+" : ""}${s.delta}`).join(", ");
  return {
    target: `S3 regular order: (a) size grows at most ${FEW_BYTES} bytes per doubling`,
    met,
    detail: `${points[0][1]} B at ${points[0][0]} devices to ${points.at(-1)?.[1]} B at ${points.at(-1)?.[0]}; per doubling ${growth}; largest +${worst.delta} B (to ${worst.n})${met ? "" : `, ${worst.delta - FEW_BYTES} B over`}`,
  };
}

function s4Targets(cases: readonly CaseResult[]): TargetCheck[] {
  const s4 = cases
    .filter((r) => r.case.scenario === "S4")
    .sort((x, y) => x.case.leafCount - y.case.leafCount);
  const bytes = (n: number) => `${sig(n)} B`;
  const metrics: [string, (r: CaseResult) => number | undefined, (n: number) => string][] = [
    ["(a) size", (r) => r.sides.a?.bytes, bytes],
    ["(a) encode", (r) => r.sides.a?.encode.medianMs, formatMs],
    ["(a) decode", (r) => r.sides.a?.decode.medianMs, formatMs],
    ["(b) encode", (r) => r.sides.b?.encode.medianMs, formatMs],
    ["(b) decode", (r) => r.sides.b?.decode.medianMs, formatMs],
  ];
  const checks: TargetCheck[] = [];
  for (const [name, value, unit] of metrics) {
    const points = s4
      .filter((r) => r.case.leafCount >= 1_000 && value(r) !== undefined)
      .map((r) => [r.case.leafCount, value(r) as number] as const);
    if (points.length < 2) continue;
    const slope = logLogSlope(points);
    const met = Math.abs(slope - 1) <= LINEAR_SLACK;
    const perLeaf = points.map(([n, v]) => unit(v / n)).join(" → ");
    checks.push({
      target: `S4: ${name} grows linearly with leaves`,
      met,
      detail: `log-log slope ${sig(slope)} over ${points[0][0]}–${points.at(-1)?.[0]} leaves (1 ± ${LINEAR_SLACK} needed); per leaf ${perLeaf}`,
    });
  }
  return checks;
}

/** The least-squares slope of log(y) against log(x): 1 means linear growth. */
export function logLogSlope(points: readonly (readonly [number, number])[]): number {
  const xs = points.map(([x]) => Math.log(x));
  const ys = points.map(([, y]) => Math.log(y));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  xs.forEach((x, i) => {
    num += (x - mx) * (ys[i] - my);
    den += (x - mx) ** 2;
  });
  return num / den;
}
