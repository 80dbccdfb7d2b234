import { formatBytes, formatCount, formatMs, sig, sizeRatio, speedRatio } from "../common/format";
import { diffSection } from "./diff-report";
import { pluginSection } from "./plugin-report";
import {
  type CaseResult,
  type RunResults,
  SIDE_ORDER,
  SIDES,
  type SideId,
  type SideResult,
} from "./results";

/** The results as markdown: the tables with ratios against (c), the targets, what was skipped. */
export function markdownReport(results: RunResults): string {
  const { cases } = results;
  const main = mainCases(cases);
  const s3 = cases.filter((r) => r.case.scenario === "S3");
  const s4 = cases.filter((r) => r.case.scenario === "S4");
  const load = results.meta.loadAverage;
  return [
    `Run of ${results.meta.date} (${results.meta.machine}; ${results.meta.versions}; ${results.meta.seconds} s).`,
    `Load average ${load.before.toFixed(1)} before and ${load.after.toFixed(1)} after: other work on the`,
    "machine slows every side alike, so absolute times vary between runs more than ratios do.",
    "",
    "Sizes are payload bytes. Times are medians of repeated runs after a warm-up. Against (c):",
    "a size of `1/n` is n times smaller, a time of `n× faster` is (c)'s time over this one.",
    "",
    ...SIDE_ORDER.map((s) => `- (${s}) ${SIDES[s]}`),
    "",
    ...defaultScenarioSection(results),
    "### S1, S2, S5, S6 and S7",
    "",
    ...trainingText(main),
    mainTable(main),
    ...limitSection(main),
    ...sizesSection(cases),
    ...(s3.length ? ["", "### S3: 100 leaves against the device count", "", s3Table(s3)] : []),
    ...(s3.length ? ["", ...s3PerDeviceSection(s3)] : []),
    ...memorySection(results),
    ...(s4.length ? ["", "### S4: leaves on one 128×8 mesh", "", s4Table(s4)] : []),
    ...pluginSection(results.plugin),
    ...diffSection(results.diff),
    "",
    "### Targets",
    "",
    ...targetLines(results),
    "",
    ...skippedSection(cases),
    ...crossCheckSection(results),
    ...startupSection(results),
  ].join("\n");
}

const NAMES: Record<SideId, string> = {
  a: "(a) TypeScript",
  b: "(b) Python → JAX",
  c: "(c) JAX pickle",
  d1: "(d1) inlined protobuf",
  d2: "(d2) per-leaf pickle",
};

function defaultScenarioSection(results: RunResults): string[] {
  const { description, inputSpecs, program } = results.defaultScenario;
  const row = (name: string, p: typeof program) =>
    `| ${name} | ${formatCount(p.bytes)} B | ${formatMs(p.encode.medianMs)} | ${formatMs(p.decode.medianMs)} |`;
  return [
    "### The default scenario",
    "",
    `TypeScript only: ${description}.`,
    "",
    "| payload | size | encode | decode + lift |",
    "| --- | ---: | ---: | ---: |",
    row("input specs (`encodeSpecs`)", inputSpecs),
    row("whole program (`encodeProgram`)", program),
    "",
  ];
}

/** docs/benchmarks.md's summary of a run: when and where, S1, S2, S5, S6, the sizes, and every target. */
export function readmeSummary(results: RunResults): string {
  const { meta } = results;
  const main = mainCases(results.cases);
  return [
    `Run of ${meta.date} (${meta.machine}; ${meta.versions}; ${meta.seconds} s).`,
    "The full tables, S3 and S4 included, are in [bench/codec/results.md](../bench/codec/results.md); every number",
    "is in `out/bench/results.json` (the raw results of the last run).",
    "",
    ...defaultScenarioSection(results),
    ...trainingText(main),
    mainTable(main),
    ...sizesSection(results.cases),
    ...pluginSection(results.plugin),
    "",
    ...targetLines(results),
  ].join("\n");
}

function targetLines(results: RunResults): string[] {
  return results.targets.map(
    (t) => `- ${t.met ? "✅ met" : "❌ MISSED"}: ${t.target}. ${t.detail}.`,
  );
}

/** The cases of the main table, each measured on its own: S1, S2, S5, S6 and S7. */
function mainCases(cases: readonly CaseResult[]): CaseResult[] {
  return cases.filter((r) => ["S1", "S2", "S5", "S6", "S7"].includes(r.case.scenario));
}

/** What S5, S6 and S7 are, if the run has them. */
function trainingText(rows: readonly CaseResult[]): string[] {
  if (!rows.some((r) => r.case.tree === "nested")) return [];
  return [
    "S5 and S6 are a training step's specs as a program holds them (`test/support/training-trees.ts`), on an",
    "8×16×8 mesh with a NamedSharding made afresh for every leaf. **S5**: a 48-layer transformer's",
    'parameters (bfloat16) and Adam state (float32, an int32 step): `{"params", "opt_state": {"step",',
    '"mu", "nu"}}`, each layer a dict of attention q/k/v/o, MLP gate/up/down and two norms. **S6**: a',
    "model of `register_dataclass` nodes (Linear, Block; attention without biases, so `None`s) and",
    "namedtuples (LayerNorm) in tuples, with optax's state `(ScaleByAdamState(count, mu, nu), EmptyState())`.",
    "**S7**: Llama 2 7B's 291 parameters by their Hugging Face names and their two Adam moments in one",
    'flat dict keyed by dotted paths (`"params.model.layers.12.mlp.up_proj.weight"`, `"opt_state.mu..."`),',
    'as `flax.traverse_util.flatten_dict(sep=".")` makes them: 873 leaves on an 8×16 mesh.',
    "",
  ];
}

/**
 * Each main case's decode and encode against the least a reader or writer of the schema does
 * with the same tree (bench/codec/limit.ts): the ratio is ours over the limit's time.
 */
function limitSection(rows: readonly CaseResult[]): string[] {
  const limited = rows.filter((r) => r.sides.a?.limit || r.sides.b?.limit);
  if (!limited.length) return [];
  const times = (ours?: { medianMs: number }, limit?: { medianMs: number }) =>
    ours && limit
      ? [
          formatMs(ours.medianMs),
          formatMs(limit.medianMs),
          `${sig(ours.medianMs / limit.medianMs)}×`,
        ]
      : ["—", "—", "—"];
  const lines = [
    "",
    "### Against the limit",
    "",
    "What no reader or writer of the schema can beat on the same tree, its payload as 1.2 writes it",
    "(keys in full): for TypeScript, ts-proto's generated `SpecsPayload.decode` and `encode`; for",
    "Python, upb's `SpecsPayload.FromString` plus `jax.tree_util.tree_unflatten` of the tree with its",
    "leaves ready. × is ours over the limit (targets: at most 2×), and TypeScript's decode over Python's.",
    "",
    "| case | TS decode | generated decode | × | TS encode | generated encode | × | Python decode | upb + unflatten | × | TS / Python decode |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of limited) {
    const [a, b] = [r.sides.a, r.sides.b];
    const tsOverPy = a && b ? `${sig(a.decode.medianMs / b.decode.medianMs)}×` : "—";
    const cells = [
      `**${r.case.id}**`,
      ...times(a?.decode, a?.limit?.decode),
      ...times(a?.encode, a?.limit?.encode),
      ...times(b?.decode, b?.limit?.decode),
      tsOverPy,
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines;
}

/** The cases whose sizes are set against a general-purpose compressor. */
const SIZE_CASES = ["S1", "S1 dict", "S5", "S6", "S7"];

/**
 * Sizes against what a user can do in one line, compress JAX's pickle; and our payload
 * compressed too, which estimates how little information it holds.
 */
function sizesSection(cases: readonly CaseResult[]): string[] {
  const rows = cases.filter((r) => SIZE_CASES.includes(r.case.id) && r.sides.c);
  if (!rows.length) return [];
  const lines = [
    "",
    "### Sizes against a compressor",
    "",
    "JAX's pickle (c) as it is, after zlib level 9 and after lzma (xz, preset 6), against our payload",
    "(a) = (b), uncompressed as it goes on the wire; then ours compressed the same ways, as an",
    "estimate of the least a format could write.",
    "",
    "| case | (c) | zlib-9 (c) | lzma (c) | ours | vs (c) | vs zlib-9 (c) | vs lzma (c) | zlib-9 ours | lzma ours |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const size = (n?: number) => (n === undefined ? "—" : formatBytes(n));
  for (const r of rows) {
    const c = r.sides.c as SideResult;
    const ours = r.sides.a?.bytes ?? r.sides.b?.bytes;
    const vs = (base?: number) =>
      ours === undefined || base === undefined ? "—" : sizeRatio(ours, base);
    const packed = r.sides.b?.compressed;
    const cells = [
      size(c.bytes),
      size(c.compressed?.zlib9),
      size(c.compressed?.lzma),
      size(ours),
      vs(c.bytes),
      vs(c.compressed?.zlib9),
      vs(c.compressed?.lzma),
      size(packed?.zlib9),
      size(packed?.lzma),
    ];
    lines.push(`| **${r.case.id}** | ${cells.join(" | ")} |`);
  }
  return lines;
}

function mainTable(rows: readonly CaseResult[]): string {
  const lines = [
    "| case | format | size | vs (c) | encode | vs (c) | decode + lift | vs (c) |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const c = r.case;
    const fresh = c.freshShardings ? ", fresh per leaf" : "";
    const label = `**${c.id}**: ${formatCount(c.leafCount)} leaves (${c.tree}), ${formatCount(c.devices)} devices, ${c.shardings.length} shardings${fresh}`;
    SIDE_ORDER.forEach((side, i) => {
      const cells = [i === 0 ? label : "", NAMES[side], ...mainCells(r, side)];
      lines.push(`| ${cells.join(" | ")} |`);
    });
  }
  return lines.join("\n");
}

/** Size, encode and decode of one side, each with its ratio against (c). */
function mainCells(r: CaseResult, side: SideId): string[] {
  const s = r.sides[side];
  if (!s) return [r.skipped[side] ? "skipped" : "failed", "", "", "", "", ""];
  const c = r.sides.c;
  const vs = (ratio: (x: number, base: number) => string, x: number, base?: number) =>
    side === "c" ? "baseline" : base === undefined ? "" : ratio(x, base);
  return [
    formatBytes(s.bytes),
    vs(sizeRatio, s.bytes, c?.bytes),
    formatMs(s.encode.medianMs),
    vs(speedRatio, s.encode.medianMs, c?.encode.medianMs),
    formatMs(s.decode.medianMs),
    vs(speedRatio, s.decode.medianMs, c?.decode.medianMs),
  ];
}

/** One row per case: sizes of every format, then (a), (b), (c) times; "—" is skipped. */
function sweepTable(
  rows: readonly CaseResult[],
  first: string,
  key: (r: CaseResult) => string,
): string {
  const size = (r: CaseResult, s: SideId) => (r.sides[s] ? formatBytes(r.sides[s].bytes) : "—");
  const time = (r: CaseResult, s: SideId, op: "encode" | "decode") =>
    r.sides[s] ? formatMs(r.sides[s][op].medianMs) : "—";
  const lines = [
    `| ${first} | (a)=(b) size | (c) size | (a) vs (c) | (d1) size | (d2) size | (a) enc | (a) dec | (b) enc | (b) dec | (c) ser | (c) deser |`,
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const { a, c } = r.sides;
    const ratio = a && c ? sizeRatio(a.bytes, c.bytes) : "—";
    lines.push(
      `| ${key(r)} | ${size(r, "a")} | ${size(r, "c")} | ${ratio} | ${size(r, "d1")} | ${size(r, "d2")} | ${time(r, "a", "encode")} | ${time(r, "a", "decode")} | ${time(r, "b", "encode")} | ${time(r, "b", "decode")} | ${time(r, "c", "encode")} | ${time(r, "c", "decode")} |`,
    );
  }
  return lines.join("\n");
}

/** S3's rows: shared shardings, then fresh ones; regular, then shuffled; by device count. */
function s3Sorted(rows: readonly CaseResult[]): CaseResult[] {
  return [...rows].sort(
    (x, y) =>
      Number(!!x.case.freshShardings) - Number(!!y.case.freshShardings) ||
      x.case.order.localeCompare(y.case.order) ||
      x.case.devices - y.case.devices,
  );
}

function s3Label(r: CaseResult): string {
  return `${formatCount(r.case.devices)} ${r.case.order}${r.case.freshShardings ? ", fresh" : ""}`;
}

function s3Table(rows: readonly CaseResult[]): string {
  return sweepTable(s3Sorted(rows), "devices, order", s3Label);
}

/** TypeScript per device (warm, cold, decode, the limit), and every side's speed against (c). */
function s3PerDeviceSection(rows: readonly CaseResult[]): string[] {
  const ns = (t: { medianMs: number } | undefined, n: number) =>
    t ? sig((t.medianMs * 1e6) / n) : "—";
  const vs = (r: CaseResult, side: "a" | "b", op: "encode" | "decode") => {
    const s = r.sides[side];
    const c = r.sides.c;
    return s && c ? `${sig(c[op].medianMs / s[op].medianMs)}×` : "—";
  };
  const lines = [
    "### S3 per device",
    "",
    "TypeScript in ns per device: encode warm (the same objects every call, as a training loop),",
    "encode cold (objects made afresh every call, as a program that rebuilds its specs), decode",
    "and lift, and the limit: writing and checking an Int32Array of that many ids. Then each",
    'side\'s speed against (c), "n×" faster. "fresh": a NamedSharding made afresh for every leaf.',
    "",
    "| devices, order | (a) enc warm | (a) enc cold | (a) dec | limit | (a) enc vs (c) | (a) dec vs (c) | (b) enc vs (c) | (b) dec vs (c) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of s3Sorted(rows)) {
    const n = r.case.devices;
    const a = r.sides.a;
    lines.push(
      `| ${s3Label(r)} | ${ns(a?.encode, n)} | ${ns(a?.encodeCold, n)} | ${ns(a?.decode, n)} | ${ns(r.limit, n)} | ${vs(r, "a", "encode")} | ${vs(r, "a", "decode")} | ${vs(r, "b", "encode")} | ${vs(r, "b", "decode")} |`,
    );
  }
  return lines;
}

function memorySection(results: RunResults): string[] {
  const m = results.decodeMemory;
  if (!m) return [];
  const per = (bytes: number) => `${sig(bytes / m.devices)} B per device`;
  return [
    "",
    `### Decode memory: an in-order mesh of ${formatCount(m.devices)} devices`,
    "",
    `In a child process with gc exposed (\`bench/codec/decode-memory.ts\`): 100 leaves on the mesh, a ${formatBytes(m.payloadBytes)} payload.`,
    `Decoding allocated ${formatBytes(Math.max(m.decodeBytes, 0))} (${per(m.decodeBytes)}; heap and array buffers, no GC in between), resident memory grew ${formatBytes(Math.max(m.rssBytes, 0))};`,
    `asking the lifted device list for its ids then wrote them out: ${formatBytes(m.idsBytes)} (${per(m.idsBytes)}).`,
  ];
}

function s4Table(rows: readonly CaseResult[]): string {
  const sorted = [...rows].sort((x, y) => x.case.leafCount - y.case.leafCount);
  return sweepTable(sorted, "leaves", (r) => formatCount(r.case.leafCount));
}

/** Skipped sides, grouped by reason, so each reason is said once. */
function skippedSection(cases: readonly CaseResult[]): string[] {
  const byReason = new Map<string, string[]>();
  for (const r of cases) {
    for (const [side, reason] of Object.entries(r.skipped)) {
      const list = byReason.get(reason) ?? [];
      list.push(`${r.case.id} (${side})`);
      byReason.set(reason, list);
    }
  }
  const failed = cases.flatMap((r) =>
    Object.entries(r.errors).map(([side, error]) => `- FAILED ${r.case.id} (${side}): ${error}`),
  );
  if (!byReason.size && !failed.length) return [];
  return [
    "### Skipped",
    "",
    ...[...byReason].map(([reason, where]) => `- ${where.join(", ")}: ${reason}`),
    ...failed,
    "",
  ];
}

function crossCheckSection(results: RunResults): string[] {
  if (!results.crossCheck.length) return [];
  const bad = results.crossCheck.filter((x) => !x.identical);
  const summary = bad.length
    ? bad.map((x) => `- ❌ MISMATCH ${x.case}: ${x.detail}`)
    : [
        `- ✅ (a) and (b) wrote byte-identical payloads in all ${results.crossCheck.length} cases both ran.`,
      ];
  return ["### Cross-check: TypeScript and Python bytes", "", ...summary, ""];
}

function startupSection(results: RunResults): string[] {
  if (!results.jaxStartup.length) return [];
  return [
    "### JAX startup on CPU devices (one process per device count)",
    "",
    "| devices | seconds to jax.devices() | threads |",
    "| ---: | ---: | ---: |",
    ...results.jaxStartup.map(
      (s) => `| ${formatCount(s.devices)} | ${s.seconds.toFixed(1)} | ${formatCount(s.threads)} |`,
    ),
    "",
  ];
}
