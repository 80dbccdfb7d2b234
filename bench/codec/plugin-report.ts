import { formatBytes, formatCount, formatMs, sizeRatio, speedRatio } from "../common/format";
import type { PluginResult, PluginSideId, PluginSideResult } from "./results";

/**
 * The P cases as markdown (results.md and docs/benchmarks.md): one table per JAX version, each side
 * against that version's own serialization, then the sizes across versions: what JAX 0.8's
 * table of shared objects bought, and what the plugin adds on top.
 */

/** A case's rows under the newest JAX and an older one. */
type Pair = { after: PluginResult; before: PluginResult };

const NAMES: Record<PluginSideId, string> = {
  jax: "JAX (cloudpickle)",
  plugin: "colocated_wire.plugin",
};

/** A colocated call with JAX's serialization and with the plugin: times, payload sizes, ratios. */
export function pluginSection(rows: readonly PluginResult[]): string[] {
  if (!rows.length) return [];
  const versions = [...new Set(rows.map((r) => r.jax))];
  const allIds = [...new Set(rows.map((r) => r.case.id))];
  const lines = [
    "",
    "### A colocated call: JAX's serialization and colocated_wire.plugin",
    "",
    "`bench/codec/plugin_bench.py`: `colocated_python(identity)` on a dict of leaves alternating two",
    "NamedShardings over a 2-D mesh, in-process on CPU (**fresh**: every leaf with a NamedSharding",
    "of its own, equal to the others, as arrays a program computed hold them). First call: a fresh",
    "colocated function, end to end; it writes every payload (three programs, one output-spec",
    "carrier). Steady call: the same function again, which writes nothing. Function payload: the",
    "first program, the function with its specialization; output specs: the bytes inside the",
    "carrier's base64 text. Medians of 3 runs. One table per JAX version, each side against that",
    "version's own serialization.",
  ];
  for (const version of versions) {
    const own = rows.filter((r) => r.jax === version);
    const ids = new Set(own.map((r) => r.case.id));
    const left = allIds.filter((id) => !ids.has(id));
    const notes: string[] = [];
    if (own.some((r) => Object.values(r.sides).some((s) => s?.readBack))) {
      notes.push(
        "This JAX's CPU compiles no colocated program and runs the function in process: the",
        "programs are written but never read back, so the bench reads them back itself after each",
        "first call, as a worker would (**read back**, not in the first call's time).",
      );
    }
    if (left.length)
      notes.push(`Not run under this version, to keep the run short: ${left.join(", ")}.`);
    lines.push("", `#### Under JAX ${version}`, "", ...notes, ...(notes.length ? [""] : []));
    lines.push(...versionTable(own));
  }
  return [...lines, ...acrossVersions(rows, versions)];
}

/** One version's table; the read-back columns only where the bench read the programs back. */
function versionTable(rows: readonly PluginResult[]): string[] {
  const readBack = rows.some((r) => Object.values(r.sides).some((s) => s?.readBack));
  const read = readBack ? " read back | vs JAX |" : "";
  const lines = [
    `| case | with | first call | vs JAX |${read} steady call | vs JAX | function payload | vs JAX | output specs | vs JAX | all programs |`,
    `| --- | --- | ---: | ---: |${readBack ? " ---: | ---: |" : ""} ---: | ---: | ---: | ---: | ---: | ---: | ---: |`,
  ];
  for (const r of rows) {
    const c = r.case;
    const leaves = `${formatCount(c.leafCount)} ${c.leafCount === 1 ? "leaf" : "leaves"}`;
    const label = `**${c.id}**: ${leaves}, ${c.mesh.join("×")} mesh${c.fresh ? ", fresh" : ""}`;
    (["jax", "plugin"] as const).forEach((side, i) => {
      const head = [i === 0 ? label : "", NAMES[side]];
      const s = r.sides[side];
      if (!s) {
        const empty = " |".repeat(readBack ? 10 : 8);
        lines.push(`| ${[...head, `failed: ${r.errors[side] ?? "?"}`].join(" | ")} |${empty}`);
        return;
      }
      const base = r.sides.jax;
      const vs = (ratio: (x: number, b: number) => string, x?: number, b?: number) =>
        side === "jax" ? "baseline" : x === undefined || b === undefined ? "—" : ratio(x, b);
      const time = (t: (x: PluginSideResult) => number | undefined) => {
        const x = t(s);
        return [x === undefined ? "—" : formatMs(x), vs(speedRatio, x, base && t(base))];
      };
      const size = (t: (x: PluginSideResult) => number | undefined) => {
        const x = t(s);
        return [x === undefined ? "—" : formatBytes(x), vs(sizeRatio, x, base && t(base))];
      };
      const cells = [
        ...time((x) => x.firstCall.medianMs),
        ...(readBack ? time((x) => x.readBack?.medianMs) : []),
        ...time((x) => x.steadyCall.medianMs),
        ...size((x) => x.programBytes[0]),
        ...size((x) => x.carrierBytes[0]),
        s.programBytes.map(formatBytes).join(" + "),
      ];
      lines.push(`| ${[...head, ...cells].join(" | ")} |`);
    });
  }
  return lines;
}

/**
 * The sizes of every case run under the first version (the newest) and an older one: JAX's
 * payload under each, and the plugin's under the newest, with a sentence on the fresh cases.
 */
function acrossVersions(rows: readonly PluginResult[], versions: readonly string[]): string[] {
  const [newest, ...older] = versions;
  const lines: string[] = [];
  for (const old of older) {
    const pairs = rows
      .filter((r) => r.jax === newest && r.sides.jax)
      .map((r) => ({
        after: r,
        before: rows.find((x) => x.jax === old && x.case.id === r.case.id && x.sides.jax),
      }))
      .filter((p): p is Pair => p.before !== undefined);
    if (!pairs.length) continue;
    lines.push(
      "",
      `#### JAX ${old} to ${newest}: what JAX's shared objects bought, and what the plugin adds`,
      "",
      "JAX 0.8 began to pickle each equal Mesh, NamedSharding and DeviceList of a payload once",
      "(`_CommonObjectState` in its serialization.py). Before, pickle's memo wrote an object once",
      "only when the very same object came again: enough when the leaves share two sharding",
      "objects, not when every leaf has its own (fresh). The plugin's table keeps each distinct",
      "value once either way.",
      "",
      `| case | payload | JAX ${old} | JAX ${newest} | JAX ${newest} vs ${old} | plugin (JAX ${newest}) | vs JAX ${newest} | vs JAX ${old} |`,
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const { after, before } of pairs) {
      const parts = [
        ["function payload", (s?: PluginSideResult) => s?.programBytes[0]],
        ["output specs", (s?: PluginSideResult) => s?.carrierBytes[0]],
      ] as const;
      parts.forEach(([name, bytes], i) => {
        const [a, b, ours] = [
          bytes(before.sides.jax),
          bytes(after.sides.jax),
          bytes(after.sides.plugin),
        ];
        const size = (n?: number) => (n === undefined ? "—" : formatBytes(n));
        const vs = (x?: number, base?: number) =>
          x === undefined || base === undefined ? "—" : sizeRatio(x, base);
        const cells = [size(a), size(b), vs(b, a), size(ours), vs(ours, b), vs(ours, a)];
        lines.push(`| ${i === 0 ? `**${after.case.id}**` : ""} | ${name} | ${cells.join(" | ")} |`);
      });
    }
    lines.push(...freshSentence(pairs, old, newest));
  }
  return lines;
}

/** The first fresh case's figures in words: the change's gain, then the plugin's on top. */
function freshSentence(pairs: readonly Pair[], old: string, newest: string): string[] {
  const pair = pairs.find((p) => p.after.case.fresh);
  const ours = pair?.after.sides.plugin;
  if (!pair || !ours) return [];
  const [a, b] = [pair.before.sides.jax, pair.after.sides.jax] as PluginSideResult[];
  const fn = [a.programBytes[0], b.programBytes[0], ours.programBytes[0]];
  const specs = [a.carrierBytes[0], b.carrierBytes[0], ours.carrierBytes[0]];
  const change = (x: number[]) =>
    `${formatBytes(x[0])} to ${formatBytes(x[1])} (${sizeRatio(x[1], x[0])})`;
  const plugin = (x: number[]) => `${formatBytes(x[2])} (${sizeRatio(x[2], x[1])}`;
  return [
    "",
    `In ${pair.after.case.id}, JAX ${old} to ${newest} took the function payload from ${change(fn)}`,
    `and the output specs from ${change(specs)}; on top of that, the plugin writes`,
    `${plugin(fn)} of JAX ${newest}'s) and ${plugin(specs)}).`,
  ];
}
