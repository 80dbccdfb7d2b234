/**
 * A diff as the CLI prints it: a first line that says whether the payloads are the same, and
 * how many leaves differ in how many groups; then a line per group, its places then its cause.
 * Python: `str(colocated_wire.diff(a, b))`, the same lines.
 */
import { countText, thousands } from "./describe";
import type { DiffCause, DiffGroup, PayloadDiff } from "./payload-diff";

/** Causes found at leaves (counted in leaves); the tree's are found at nodes. */
const LEAF_CAUSES: ReadonlySet<DiffCause> = new Set([
  "shape",
  "dtype",
  "key_shape",
  "weak_type",
  "sharding",
  "mesh",
  "devices",
  "leaf_kind",
  "prng_impl",
  "pickle",
  "function",
  "leaf",
]);

/** How many paths a line names before "and N more". */
const PATHS_SHOWN = 3;

/** The diff in lines, the payloads named `names`. */
export function formatDiff(
  diff: PayloadDiff,
  names: readonly [string, string] = ["a", "b"],
): string {
  const [a, b] = names;
  let first: string;
  if (diff.same) first = `${a} and ${b} are the same (${thousands(diff.bytes.a)} bytes)`;
  else if (diff.equal) first = `${a} and ${b}: bytes differ, contents equal`;
  else {
    const leaves = countText(diff.differingLeaves, "leaf", "leaves");
    first = `${a} and ${b} differ: ${leaves} in ${countText(diff.groups.length, "group", "groups")}`;
  }
  const showPart = diff.kind === "program";
  return [first, ...diff.groups.map((group) => `  ${groupLine(group, showPart)}`)].join("\n");
}

/** "1,000 leaves under ["layers"][*]["w"]: sharding #2 to #5, ..." */
function groupLine(group: DiffGroup, showPart: boolean): string {
  if (group.paths.length === 0) return group.text;
  const atLeaves = LEAF_CAUSES.has(group.cause);
  const places = atLeaves
    ? countText(group.count, "leaf", "leaves")
    : countText(group.count, "node", "nodes");
  const where = atLeaves && group.count > 1 ? "under" : "at";
  const paths = group.paths.slice(0, PATHS_SHOWN).map((p) => {
    if (!showPart) return p.path || "(root)";
    return `${p.part}${p.path}`;
  });
  const more = group.paths.length - PATHS_SHOWN;
  const pathsText = more > 0 ? `${paths.join(", ")} and ${thousands(more)} more` : paths.join(", ");
  const leaves =
    !atLeaves && group.leaves > 0 ? ` (${countText(group.leaves, "leaf", "leaves")})` : "";
  return `${places} ${where} ${pathsText}: ${group.text}${leaves}`;
}
