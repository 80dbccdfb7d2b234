import { decodeSpecs, encodeSpecs, ShapeDtypeStruct } from "../../src";
import { diffPayloads } from "../../src/diff/diff-payloads";
import { buildSpecs } from "../../test/support/build-specs";
import { deviceCount, s2Cases } from "../../test/support/scenarios";
import { DEFAULT_POLICY, measure, type Policy, type Timing } from "../common/measure";
import { runPythonScript } from "./python";

/**
 * The diff bench: `colocated-wire diff` of two S2 payloads (10,000 leaves on 4,096
 * devices) that differ in one leaf, and in every leaf, in both languages, beside the time to
 * decode both payloads, which the diff does first. TypeScript runs in this process; Python in
 * bench/codec/diff_bench.py, on the same bytes.
 */

/** How B differs from A: one leaf's shape, or every leaf's dtype. */
export const DIFF_CHANGES = {
  "one leaf": (leaves: ShapeDtypeStruct[]) =>
    leaves.map((leaf, i) =>
      i === 5_000 ? new ShapeDtypeStruct([512, 512], leaf.dtype, leaf.sharding) : leaf,
    ),
  "every leaf": (leaves: ShapeDtypeStruct[]) =>
    leaves.map((leaf) => new ShapeDtypeStruct(leaf.shape, "bfloat16", leaf.sharding)),
} as const;

export type DiffChange = keyof typeof DIFF_CHANGES;

export type DiffLanguage = "TypeScript" | "Python";

/** One diff measured. */
export interface DiffRow {
  /** "S2 diff one leaf": what --filter matches. */
  id: string;
  change: DiffChange;
  language: DiffLanguage;
  leaves: number;
  devices: number;
  /** The leaves the diff found differing (both languages must agree). */
  differingLeaves?: number;
  /** `decodeSpecs` (`deserialize_specs`) of A, then of B. */
  decodeBoth?: Timing;
  /** `diffPayloads(a, b)` (`colocated_wire.diff(a, b)`). */
  diff?: Timing;
  error?: string;
}

/** The diff rows' ids: "S2 diff one leaf", "S2 diff every leaf". */
function ids(): { id: string; change: DiffChange }[] {
  return (Object.keys(DIFF_CHANGES) as DiffChange[]).map((change) => ({
    id: `S2 diff ${change}`,
    change,
  }));
}

/** The rows a run wants: all of them unless --quick; with a filter, those whose id contains a part of it. */
export function diffWanted(quick: boolean, filter?: string): { id: string; change: DiffChange }[] {
  if (filter === undefined) return quick ? [] : ids();
  const parts = filter.split(",");
  return ids().filter(({ id }) => parts.some((part) => id.includes(part)));
}

/** Two payloads to diff, and the rows they are measured in. */
interface Pair {
  id: string;
  change: DiffChange;
  a: Uint8Array;
  b: Uint8Array;
}

type Versions = { jax: string; python: string };

/** Measures each wanted change in TypeScript, then in Python (one JAX process of 4,096 devices). */
export async function measureDiff(
  root: string,
  wanted: readonly { id: string; change: DiffChange }[],
  progress: (task: string) => void = () => {},
  policy: Policy = DEFAULT_POLICY,
): Promise<{ rows: DiffRow[]; versions?: Versions }> {
  const c = s2Cases()[0];
  const { treedef, leaves } = buildSpecs(c);
  const a = encodeSpecs(treedef, leaves);
  const pairs = wanted.map(({ id, change }) => ({
    id,
    change,
    a,
    b: encodeSpecs(treedef, DIFF_CHANGES[change](leaves)),
  }));
  const row = (pair: Pair, language: DiffLanguage): DiffRow => ({
    id: pair.id,
    change: pair.change,
    language,
    leaves: leaves.length,
    devices: deviceCount(c),
  });
  const ts = pairs.map((pair) => {
    progress(`${pair.id} (TypeScript)`);
    return measureTypeScript(pair, row(pair, "TypeScript"), policy);
  });
  const python = pairs.map((pair) => row(pair, "Python"));
  const versions = await measurePython(root, pairs, python, policy, progress);
  python.forEach((r, i) => {
    if (!r.error && r.differingLeaves !== ts[i].differingLeaves) {
      r.error = `Python found ${r.differingLeaves} leaves differing, TypeScript ${ts[i].differingLeaves}`;
    }
  });
  return { rows: [...ts, ...python], versions };
}

/** Decoding both payloads, then diffing them, in this process. */
function measureTypeScript({ a, b }: Pair, row: DiffRow, policy: Policy): DiffRow {
  row.decodeBoth = measure(() => [decodeSpecs(a), decodeSpecs(b)], policy).timing;
  const { result, timing } = measure(() => diffPayloads(a, b), policy);
  return { ...row, diff: timing, differingLeaves: result.differingLeaves };
}

/** The same in bench/codec/diff_bench.py, on JAX with the payloads' devices; fills `rows` in. */
async function measurePython(
  root: string,
  pairs: readonly Pair[],
  rows: DiffRow[],
  policy: Policy,
  progress: (task: string) => void,
): Promise<Versions | undefined> {
  progress("S2 diff (Python, starting JAX on 4,096 CPU devices)");
  let versions: Versions | undefined;
  const job = {
    policy,
    pairs: pairs.map(({ id, a, b }) => ({
      id,
      a: Buffer.from(a).toString("base64"),
      b: Buffer.from(b).toString("base64"),
    })),
  };
  const devices = rows[0]?.devices ?? 0;
  try {
    await runPythonScript(root, "diff_bench.py", devices, job, (line) => {
      const m = line as PythonDiffMessage;
      if (m.type === "startup") {
        versions = { jax: m.jax, python: m.python };
        return;
      }
      const r = rows.find((row) => row.id === m.id) as DiffRow;
      if (m.type === "error") r.error = m.message;
      else {
        const { decodeBoth, diff, differingLeaves } = m;
        Object.assign(r, { decodeBoth, diff, differingLeaves });
      }
      progress(`${m.id} (Python)`);
    });
  } catch (error) {
    for (const r of rows) r.error ??= (error as Error).message.split("\n")[0];
  }
  return versions;
}

/** What bench/codec/diff_bench.py prints, one JSON object per line. */
type PythonDiffMessage =
  | { type: "startup"; jax: string; python: string }
  | { type: "result"; id: string; decodeBoth: Timing; diff: Timing; differingLeaves: number }
  | { type: "error"; id: string; message: string };
