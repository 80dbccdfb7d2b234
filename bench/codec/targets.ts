import { S3_DEVICE_COUNTS } from "../../test/support/scenarios";
import { formatBytes, formatCount, formatMs, sig } from "../common/format";
import type { Timing } from "../common/measure";
import type {
  CaseResult,
  CompressedSizes,
  DecodeMemory,
  SideId,
  SideResult,
  TargetCheck,
} from "./results";

/** A few bytes: the most the (a) payload may grow each time S3's regular mesh doubles. */
export const FEW_BYTES = 4;

/**
 * S4's log-log slope of time against leaves, from 1,000 leaves up, must be 1 ± this, and its size's
 * at most 1 + this: leaf copies (1.3) write S4's column of two shardings in turn in a few bytes
 * at every leaf count, which is no growth at all.
 */
export const LINEAR_SLACK = 0.15;

/** TypeScript against JAX (c) on every scenario: encode and decode-and-lift. */
export const TS_ENCODE_SPEEDUP = 5;
export const TS_DECODE_SPEEDUP = 10;
/** S1 and S2 held TypeScript's encode to more from the start. */
export const S1_S2_TS_ENCODE_SPEEDUP = 10;
/** Python (b) against JAX (c), each way: S1, S2, S5, S6 and S3 with a fresh sharding per leaf. */
export const PY_SPEEDUP = 2;
/**
 * (a)'s payload at most 1/this of (c)'s: S1 and S2 from the start; every main scenario (S1, its
 * flat dict, S2, S5, S6, S7) since the key trie, and smaller than lzma of (c) too.
 */
export const S1_S2_SIZE_RATIO = 20;
export const S5_SIZE_RATIO = 40;
/** (a) and (b) against the least a reader or writer of the schema does (limit.ts): within this factor. */
export const LIMIT_FACTOR = 2;
/** At S3's largest in-order mesh: TS cold encode and decode, in ns per device. */
export const S3_MAX_NS_PER_DEVICE = 20;
/** S3's warm encode at its largest mesh, within this factor of its time at 1,024 devices. */
export const S3_WARM_GROWTH = 2;
/** Shuffled ids cost at most this many bytes per device over the in-order payload. */
export const SHUFFLED_BYTES_PER_DEVICE = 2;
/** Decoding a million in-order devices allocates at most this many bytes per device (4 × an int32). */
export const DECODE_BYTES_PER_DEVICE = 16;

/** Checks the issue's targets against a run's results; a target with no data is not reported. */
export function checkTargets(cases: readonly CaseResult[], memory?: DecodeMemory): TargetCheck[] {
  const checks: TargetCheck[] = cases.flatMap(caseTargets);
  const s3 = s3Target(cases);
  if (s3) checks.push(s3);
  checks.push(...s3SpeedTargets(cases), ...s3PerDeviceTargets(cases));
  const shuffled = shuffledSizeTarget(cases);
  if (shuffled) checks.push(shuffled);
  if (memory) checks.push(memoryTarget(memory));
  checks.push(...s4Targets(cases), ...s4SpeedTargets(cases));
  return checks;
}

/** S3 cases of one variant (shared or fresh shardings) and order, by device count. */
function s3Of(cases: readonly CaseResult[], fresh: boolean, order: string): CaseResult[] {
  return cases
    .filter(
      (r) =>
        r.case.scenario === "S3" && !!r.case.freshShardings === fresh && r.case.order === order,
    )
    .sort((x, y) => x.case.devices - y.case.devices);
}

/**
 * "At every count" targets: the worst ratio of `side` over (c), over the rows both ran; a row
 * is named by its device count, or by `unit` of `count` (S4's leaves).
 */
function everyCount(
  rows: readonly CaseResult[],
  label: string,
  need: number,
  time: (s: SideResult) => number,
  side: "a" | "b",
  count: (r: CaseResult) => number = (r) => r.case.devices,
  unit = "devices",
): TargetCheck | undefined {
  const points = rows
    .filter((r) => r.sides[side] && r.sides.c)
    .map((r) => {
      const ours = time(r.sides[side] as SideResult);
      const jax = time(r.sides.c as SideResult);
      return { n: count(r), ratio: jax / ours, ours, jax };
    });
  if (!points.length) return undefined;
  const worst = points.reduce((w, p) => (p.ratio < w.ratio ? p : w));
  const check = atLeast(
    label,
    worst.ratio,
    need,
    `worst at ${formatCount(worst.n)} ${unit}, ${formatMs(worst.ours)} vs ${formatMs(worst.jax)}`,
  );
  const all = points.map((p) => `${sig(p.ratio)}×`).join(", ");
  return {
    ...check,
    detail: `${check.detail}; from ${formatCount(points[0].n)} ${unit} up: ${all}`,
  };
}

/** S3's speed targets: the side, what it measures, the speed-up needed, and if only S3 fresh has it. */
const S3_SPEEDUPS = [
  {
    side: "a",
    what: "TS encode",
    phase: "encode",
    speedup: TS_ENCODE_SPEEDUP,
    freshOnly: false,
  },
  {
    side: "a",
    what: "TS decode",
    phase: "decode",
    speedup: TS_DECODE_SPEEDUP,
    freshOnly: false,
  },
  {
    side: "b",
    what: "Python serialize_specs",
    phase: "encode",
    speedup: PY_SPEEDUP,
    freshOnly: true,
  },
  {
    side: "b",
    what: "Python deserialize_specs",
    phase: "decode",
    speedup: PY_SPEEDUP,
    freshOnly: true,
  },
] as const;

function s3SpeedTargets(cases: readonly CaseResult[]): TargetCheck[] {
  const checks: (TargetCheck | undefined)[] = [];
  for (const fresh of [false, true]) {
    for (const order of ["regular", "shuffled"]) {
      const rows = s3Of(cases, fresh, order);
      const name = `S3${fresh ? " fresh" : ""} ${order}`;
      for (const { side, what, phase, speedup, freshOnly } of S3_SPEEDUPS) {
        if (freshOnly && !fresh) continue;
        const target = `${name}: ${what} at least ${speedup}× faster than (c) at every device count`;
        checks.push(everyCount(rows, target, speedup, (s) => s[phase].medianMs, side));
      }
    }
  }
  return checks.filter((c): c is TargetCheck => c !== undefined);
}

/** ns per device of a timing at n devices. */
export function nsPerDevice(t: Timing, n: number): number {
  return (t.medianMs * 1e6) / n;
}

function s3PerDeviceTargets(cases: readonly CaseResult[]): TargetCheck[] {
  const rows = s3Of(cases, false, "regular").filter((r) => r.sides.a);
  const largest = rows.find((r) => r.case.devices === Math.max(...S3_DEVICE_COUNTS));
  const at1024 = rows.find((r) => r.case.devices === 1_024);
  if (!largest?.sides.a) return [];
  const a = largest.sides.a;
  const n = largest.case.devices;
  const limit = largest.limit ? `; the limit ${sig(nsPerDevice(largest.limit, n))} ns` : "";
  const checks: TargetCheck[] = [];
  const perDevice = (what: string, t: Timing | undefined) => {
    if (!t) return;
    const ns = nsPerDevice(t, n);
    checks.push(
      atMost(
        `S3 regular ${formatCount(n)} devices: TS ${what} at most ${S3_MAX_NS_PER_DEVICE} ns per device`,
        ns,
        S3_MAX_NS_PER_DEVICE,
        `${sig(ns)} ns per device (${formatMs(t.medianMs)})${limit}`,
      ),
    );
  };
  perDevice("encode (cold)", a.encodeCold);
  perDevice("decode", a.decode);
  if (at1024?.sides.a) {
    const growth = a.encode.medianMs / at1024.sides.a.encode.medianMs;
    checks.push(
      atMost(
        `S3 regular: TS warm encode at ${formatCount(n)} devices within ${S3_WARM_GROWTH}× of its time at 1,024`,
        growth,
        S3_WARM_GROWTH,
        `${formatMs(a.encode.medianMs)} vs ${formatMs(at1024.sides.a.encode.medianMs)}: ${sig(growth)}×`,
      ),
    );
  }
  return checks;
}

/**
 * Shuffled ids over the in-order payload, per device, where JAX runs too (up to 16,384
 * devices): a random order of n ids needs log2(n!)/n bits each, about 2.07 bytes at 262,144,
 * so no format holds 2 bytes per device there. Larger counts are shown, not checked.
 */
function shuffledSizeTarget(cases: readonly CaseResult[]): TargetCheck | undefined {
  const regular = new Map(
    s3Of(cases, false, "regular").map((r) => [r.case.devices, r.sides.a?.bytes]),
  );
  const points = s3Of(cases, false, "shuffled")
    .filter((r) => r.sides.a && regular.get(r.case.devices) !== undefined)
    .map((r) => {
      const extra = (r.sides.a as SideResult).bytes - (regular.get(r.case.devices) as number);
      return { n: r.case.devices, perDevice: extra / r.case.devices, checked: !!r.sides.c };
    });
  const checked = points.filter((p) => p.checked);
  if (!checked.length) return undefined;
  const worst = checked.reduce((w, p) => (p.perDevice > w.perDevice ? p : w));
  const all = points
    .map((p) => `${formatCount(p.n)}: ${sig(p.perDevice)}${p.checked ? "" : " (unchecked)"}`)
    .join(", ");
  return atMost(
    `S3 shuffled: at most ${SHUFFLED_BYTES_PER_DEVICE} bytes per device over the in-order payload, at every count JAX runs`,
    worst.perDevice,
    SHUFFLED_BYTES_PER_DEVICE,
    `worst ${sig(worst.perDevice)} B at ${formatCount(worst.n)} devices; by count ${all} (above 16,384 a random order needs more than 2 bytes per id in any format)`,
  );
}

function memoryTarget(m: DecodeMemory): TargetCheck {
  const perDevice = m.decodeBytes / m.devices;
  return atMost(
    `Decoding an in-order mesh of ${formatCount(m.devices)} devices allocates at most ${DECODE_BYTES_PER_DEVICE} bytes per device`,
    perDevice,
    DECODE_BYTES_PER_DEVICE,
    `${formatBytes(Math.max(m.decodeBytes, 0))} for a ${formatBytes(m.payloadBytes)} payload: ${sig(perDevice)} B per device; asking for the ids then writes them out: ${sig(m.idsBytes / m.devices)} B per device`,
  );
}

/** The cases of S1, S2, S5, S6 and S7, each measured on its own against (c). */
const S1_S2 = ["S1", "S1 dict", "S2"];
const TRAINING = ["S5", "S6", "S7"];

type Measure = (r: CaseResult) => number | undefined;
const bytesOf =
  (side: SideId): Measure =>
  (r) =>
    r.sides[side]?.bytes;
const compressedOf =
  (how: keyof CompressedSizes): Measure =>
  (r) =>
    r.sides.c?.compressed?.[how];
const timeOf =
  (side: SideId, phase: "encode" | "decode"): Measure =>
  (r) =>
    r.sides[side]?.[phase].medianMs;
const limitOf =
  (side: SideId, phase: "encode" | "decode"): Measure =>
  (r) =>
    r.sides[side]?.limit?.[phase]?.medianMs;
/** Every main scenario, each measured on its own against its limit. */
const MAIN = ["S1", "S1 dict", "S2", "S5", "S6", "S7"];

/**
 * The targets of single cases, one row each: on each case of `cases`, `theirs` over `ours`
 * must be at least `need` (above it, if `strict`).
 */
const CASE_TARGETS: {
  cases: string[];
  target: string;
  need: number;
  strict?: boolean;
  ours: Measure;
  theirs: Measure;
  unit: (n: number) => string;
}[] = [
  {
    cases: S1_S2,
    target: `payload at most 1/${S1_S2_SIZE_RATIO} of (c)`,
    need: S1_S2_SIZE_RATIO,
    ours: bytesOf("a"),
    theirs: bytesOf("c"),
    unit: formatBytes,
  },
  {
    cases: MAIN,
    target: `payload at most 1/${S5_SIZE_RATIO} of (c)`,
    need: S5_SIZE_RATIO,
    ours: bytesOf("a"),
    theirs: bytesOf("c"),
    unit: formatBytes,
  },
  {
    cases: ["S1 dict"],
    target: "payload smaller than zlib-9 of (c)",
    need: 1,
    strict: true,
    ours: bytesOf("a"),
    theirs: compressedOf("zlib9"),
    unit: formatBytes,
  },
  {
    cases: MAIN,
    target: "payload smaller than lzma of (c)",
    need: 1,
    strict: true,
    ours: bytesOf("a"),
    theirs: compressedOf("lzma"),
    unit: formatBytes,
  },
  {
    cases: S1_S2,
    target: `TS encode at least ${S1_S2_TS_ENCODE_SPEEDUP}× faster than (c) serialize`,
    need: S1_S2_TS_ENCODE_SPEEDUP,
    ours: timeOf("a", "encode"),
    theirs: timeOf("c", "encode"),
    unit: formatMs,
  },
  {
    cases: TRAINING,
    target: `TS encode at least ${TS_ENCODE_SPEEDUP}× faster than (c) serialize`,
    need: TS_ENCODE_SPEEDUP,
    ours: timeOf("a", "encode"),
    theirs: timeOf("c", "encode"),
    unit: formatMs,
  },
  {
    cases: [...S1_S2, ...TRAINING],
    target: `TS decode at least ${TS_DECODE_SPEEDUP}× faster than (c) deserialize`,
    need: TS_DECODE_SPEEDUP,
    ours: timeOf("a", "decode"),
    theirs: timeOf("c", "decode"),
    unit: formatMs,
  },
  {
    cases: [...S1_S2, ...TRAINING],
    target: `Python serialize_specs at least ${PY_SPEEDUP}× faster than (c) serialize`,
    need: PY_SPEEDUP,
    ours: timeOf("b", "encode"),
    theirs: timeOf("c", "encode"),
    unit: formatMs,
  },
  {
    cases: [...S1_S2, ...TRAINING],
    target: `Python deserialize_specs at least ${PY_SPEEDUP}× faster than (c) deserialize`,
    need: PY_SPEEDUP,
    ours: timeOf("b", "decode"),
    theirs: timeOf("c", "decode"),
    unit: formatMs,
  },
  // "Within n× of the limit" is the limit's time over ours at least 1/n.
  {
    cases: MAIN,
    target: `TS decode within ${LIMIT_FACTOR}× of the generated decode (limit)`,
    need: 1 / LIMIT_FACTOR,
    ours: timeOf("a", "decode"),
    theirs: limitOf("a", "decode"),
    unit: formatMs,
  },
  {
    cases: MAIN,
    target: `TS encode within ${LIMIT_FACTOR}× of the generated encode (limit)`,
    need: 1 / LIMIT_FACTOR,
    ours: timeOf("a", "encode"),
    theirs: limitOf("a", "encode"),
    unit: formatMs,
  },
  {
    cases: MAIN,
    target: "TS decode no slower than Python deserialize_specs of the same bytes",
    need: 1,
    ours: timeOf("a", "decode"),
    theirs: timeOf("b", "decode"),
    unit: formatMs,
  },
  {
    cases: MAIN,
    target: `Python deserialize_specs within ${LIMIT_FACTOR}× of upb's parse and tree_unflatten (limit)`,
    need: 1 / LIMIT_FACTOR,
    ours: timeOf("b", "decode"),
    theirs: limitOf("b", "decode"),
    unit: formatMs,
  },
];

/** The single-case targets of one case, those it has both numbers for. */
function caseTargets(r: CaseResult): TargetCheck[] {
  return CASE_TARGETS.flatMap(({ cases, target, need, strict, ours, theirs, unit }) => {
    const x = ours(r);
    const y = theirs(r);
    if (!cases.includes(r.case.id) || x === undefined || y === undefined) return [];
    return [atLeast(`${r.case.id}: ${target}`, y / x, need, `${unit(x)} vs ${unit(y)}`, strict)];
  });
}

/** S4: TypeScript's speed targets of every scenario, at every leaf count. */
function s4SpeedTargets(cases: readonly CaseResult[]): TargetCheck[] {
  const rows = cases
    .filter((r) => r.case.scenario === "S4")
    .sort((x, y) => x.case.leafCount - y.case.leafCount);
  return S3_SPEEDUPS.filter((t) => t.side === "a").flatMap(({ what, phase, speedup }) => {
    const target = `S4: ${what} at least ${speedup}× faster than (c) at every leaf count`;
    const time = (s: SideResult) => s[phase].medianMs;
    const check = everyCount(rows, target, speedup, time, "a", (r) => r.case.leafCount, "leaves");
    return check ? [check] : [];
  });
}

/** A "better by at least `need`×" (or, if strict, by more) target, with by how much it is met or missed. */
function atLeast(
  target: string,
  got: number,
  need: number,
  numbers: string,
  strict = false,
): TargetCheck {
  const met = strict ? got > need : got >= need;
  const margin = met
    ? `met with ${sig(got / need)}× to spare`
    : `missed: ${sig(got)}× of the ${need}× needed (${sig((1 - got / need) * 100)}% short)`;
  return { target, met, detail: `${numbers}: ${sig(got)}×, ${margin}` };
}

/** An "at most `limit`" target, with by how much it is met or missed. */
function atMost(target: string, got: number, limit: number, numbers: string): TargetCheck {
  const met = got <= limit;
  const margin = met
    ? `met (${sig(limit)} allowed)`
    : `missed: ${sig(got / limit)}× the ${sig(limit)} allowed`;
  return { target, met, detail: `${numbers}: ${margin}` };
}

function s3Target(cases: readonly CaseResult[]): TargetCheck | undefined {
  const points = cases
    .filter(
      (r) =>
        r.case.scenario === "S3" &&
        r.case.order === "regular" &&
        !r.case.freshShardings &&
        r.sides.a,
    )
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
  // Name, value, unit, and whether growing less than linearly is met (only size: a fixed cost
  // per payload that dwarfs the per-leaf one is a time worth knowing about).
  type Metric = [string, (r: CaseResult) => number | undefined, (n: number) => string, boolean?];
  const metrics: Metric[] = [
    ["(a) size", (r) => r.sides.a?.bytes, bytes, true],
    ["(a) encode", (r) => r.sides.a?.encode.medianMs, formatMs],
    ["(a) decode", (r) => r.sides.a?.decode.medianMs, formatMs],
    ["(b) encode", (r) => r.sides.b?.encode.medianMs, formatMs],
    ["(b) decode", (r) => r.sides.b?.decode.medianMs, formatMs],
  ];
  const checks: TargetCheck[] = [];
  for (const [name, value, unit, atMost] of metrics) {
    const points = s4
      .filter((r) => r.case.leafCount >= 1_000 && value(r) !== undefined)
      .map((r) => [r.case.leafCount, value(r) as number] as const);
    if (points.length < 2) continue;
    const slope = logLogSlope(points);
    const met = atMost ? slope <= 1 + LINEAR_SLACK : Math.abs(slope - 1) <= LINEAR_SLACK;
    const perLeaf = points.map(([n, v]) => unit(v / n)).join(" → ");
    const needed = atMost ? `at most ${1 + LINEAR_SLACK}` : `1 ± ${LINEAR_SLACK}`;
    checks.push({
      target: `S4: ${name} grows ${atMost ? "at most " : ""}linearly with leaves`,
      met,
      detail: `log-log slope ${sig(slope)} over ${points[0][0]}–${points.at(-1)?.[0]} leaves (${needed} needed); per leaf ${perLeaf}`,
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
