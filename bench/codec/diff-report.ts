import { formatCount, formatMs, sig } from "../common/format";
import type { DiffRow } from "./diff";
import type { TargetCheck } from "./results";

/** A diff costs at most this many times decoding both payloads. */
export const DIFF_DECODE_RATIO = 2;

/** The diff rows as a table: each diff beside the time to decode both payloads. */
export function diffSection(rows: readonly DiffRow[] | undefined): string[] {
  if (!rows?.length) return [];
  const { leaves, devices } = rows[0];
  const lines = [
    "",
    "### Diff: two S2 payloads",
    "",
    `\`colocated-wire diff\` of two S2 payloads (${formatCount(leaves)} leaves, ${formatCount(devices)} devices) that differ in`,
    "one leaf (its shape) or in every leaf (their dtype), beside decoding both, which the diff does",
    "first: TypeScript `diffPayloads` against `decodeSpecs` twice, Python `colocated_wire.diff`",
    "against `deserialize_specs` twice (onto 4,096 CPU devices; the diff lifts onto none).",
    "",
    "| payloads differ in | language | leaves differing | decode both | diff | diff / decode both |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const cells = r.error
      ? ["", "", "", `failed: ${r.error}`]
      : [
          formatCount(r.differingLeaves ?? 0),
          formatMs(r.decodeBoth?.medianMs ?? Number.NaN),
          formatMs(r.diff?.medianMs ?? Number.NaN),
          `${sig(ratioOf(r))}×`,
        ];
    lines.push(`| ${r.change} | ${r.language} | ${cells.join(" | ")} |`);
  }
  return lines;
}

/** "diff at most 2× the time to decode both", one line per row measured. */
export function diffTargets(rows: readonly DiffRow[] | undefined): TargetCheck[] {
  return (rows ?? []).map((r) => {
    const target = `${r.id}, ${r.language}: the diff at most ${DIFF_DECODE_RATIO}× the time to decode both payloads`;
    if (r.error || !r.diff || !r.decodeBoth) {
      return { target, met: false, detail: `no measurement (${r.error ?? "missing"})` };
    }
    const ratio = ratioOf(r);
    const detail = `${sig(ratio)}×: diff ${formatMs(r.diff.medianMs)}, decode both ${formatMs(r.decodeBoth.medianMs)}`;
    return { target, met: ratio <= DIFF_DECODE_RATIO, detail };
  });
}

function ratioOf(r: DiffRow): number {
  return (r.diff?.medianMs ?? Number.NaN) / (r.decodeBoth?.medianMs ?? Number.NaN);
}
