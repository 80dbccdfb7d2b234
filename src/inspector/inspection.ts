import {
  ProgramPayload,
  type Specs as SpecsMsg,
  SpecsPayload,
  ValuePayload,
} from "../../gen/ts/colocated/v1/payload";
import { Entry } from "../../gen/ts/colocated/v1/table";
import type { TreeDef } from "../../gen/ts/colocated/v1/tree";
import { decodeProgram, decodeSpecs, decodeValue } from "../decode";
import { check as checkTree, expandLeaves } from "../entries/treedef";
import { DEFAULT_LIMITS } from "../limits";
import { type PayloadKindName, payloadKindOf } from "../payload/header";
import { leafRefs } from "../payload/specs";
import { describeWriter, payloadWriter, type Writer } from "../payload/writer";
import { describeValueLeaf, leafPaths } from "./describe-leaf";
import { describeKeyPool, type KeyPoolView, keyPoolView } from "./key-pool";
import { describeLeafCopies, type LeafCopiesView, leafCopiesView } from "./leaf-copies";

/** One table entry as inspect shows it. */
export interface EntryRow {
  index: number;
  kind: string;
  bytes: number;
  /** Entries that refer to this one. */
  entries: number[];
  /** How many leaves refer to it, by where they sit. */
  leaves: Record<string, number>;
  /** Other payload fields that refer to it, such as "devices". */
  fields: string[];
}

/** A value payload's leaf as inspect lists it. */
export interface ValueLeafRow {
  path: string;
  /** The table entry it is, for a table object. */
  entry: number | null;
  /** Its kind: a table object's entry kind, or dtype, prngImpl, function, pickled. */
  kind: string;
  text: string;
}

/** A tree's dict keys: "specs", a program's "input" and "output", or a "value". */
export interface KeyPoolRow {
  tree: string;
  pool: KeyPoolView;
}

/** How a tree that has leaf copies (1.3) writes its leaves: "specs", or a program's "input" and "output". */
export interface LeafCopiesRow {
  tree: string;
  leaves: LeafCopiesView;
}

/** What inspect reports about a payload. */
export interface Inspection {
  kind: PayloadKindName;
  payloadBytes: number;
  tableBytes: number;
  rows: EntryRow[];
  /** The payload's size had every reference been replaced by the object it names. */
  inlinedBytes: number;
  /** A value payload's leaves, in leaf order; empty for the other kinds. */
  values: ValueLeafRow[];
  /** How each tree writes its dict keys, in the payload's order. */
  keyPools: KeyPoolRow[];
  /** How each tree with leaf copies writes its leaves, in the payload's order. */
  leafCopies: LeafCopiesRow[];
  /** Who wrote it, when its header says (1.3). */
  writer?: Writer;
}

/** Validates a payload and describes its table, its size, and what sharing saves. */
export function inspectPayload(bytes: Uint8Array): Inspection {
  const kind = payloadKindOf(bytes);
  const { entries, referrers, values = [], keyPools, leafCopies = [] } = REFERRERS[kind](bytes);
  const rows: EntryRow[] = entries.map((entry, index) => ({
    index,
    kind: entry.kind?.$case ?? "unknown",
    bytes: Entry.encode(entry).finish().length,
    entries: [],
    leaves: {},
    fields: [],
  }));
  const inlined: number[] = [];
  entries.forEach((entry, index) => {
    const refs = entryRefs(entry);
    for (const ref of refs) rows[ref].entries.push(index);
    inlined.push(rows[index].bytes + refs.reduce((sum, ref) => sum + inlined[ref], 0));
  });
  let inlinedBytes = bytes.length;
  const tableBytes = rows.reduce((sum, row) => sum + row.bytes, 0);
  inlinedBytes -= tableBytes;
  for (const { ref, where, leaf } of referrers) {
    if (leaf) rows[ref].leaves[where] = (rows[ref].leaves[where] ?? 0) + 1;
    else rows[ref].fields.push(where);
    inlinedBytes += inlined[ref];
  }
  const writer = payloadWriter(bytes);
  return {
    kind,
    payloadBytes: bytes.length,
    tableBytes,
    rows,
    inlinedBytes,
    values,
    keyPools,
    leafCopies,
    writer,
  };
}

/** Renders an inspection as the text the CLI prints. */
export function formatInspection(inspection: Inspection): string {
  const lines = [
    `${inspection.kind} payload: ${inspection.payloadBytes} bytes, table ${inspection.tableBytes} bytes in ${inspection.rows.length} entries${leafSummary(inspection)}`,
    ...(inspection.writer ? [`written by ${describeWriter(inspection.writer)}`] : []),
    ...inspection.keyPools.map(({ tree, pool }) => `${tree} keys: ${describeKeyPool(pool)}`),
    ...inspection.leafCopies.map(
      ({ tree, leaves }) => `${tree} leaves: ${describeLeafCopies(leaves)}`,
    ),
    "",
    `${"index".padStart(5)}  ${"kind".padEnd(22)} ${"bytes".padStart(7)}  referred to by`,
  ];
  for (const row of inspection.rows) {
    const by = [
      ...(row.entries.length ? [`entries ${row.entries.join(", ")}`] : []),
      ...Object.entries(row.leaves).map(
        ([where, n]) => `${n} ${where} ${n === 1 ? "leaf" : "leaves"}`,
      ),
      ...row.fields,
    ];
    lines.push(
      `${String(row.index).padStart(5)}  ${row.kind.padEnd(22)} ${String(row.bytes).padStart(7)}  ${by.join("; ") || "-"}`,
    );
  }
  const ratio = inspection.inlinedBytes / inspection.payloadBytes;
  lines.push(
    "",
    `with every shared object inlined: ${inspection.inlinedBytes} bytes (${ratio.toFixed(1)}x this payload)`,
  );
  if (inspection.kind === "value") {
    lines.push("", "leaves:");
    for (const [i, leaf] of inspection.values.entries()) {
      const entry = leaf.entry === null ? "" : ` (entry ${leaf.entry})`;
      lines.push(`${String(i).padStart(5)}  ${leaf.path}  ${leaf.kind}${entry}: ${leaf.text}`);
    }
  }
  return lines.join("\n");
}

/** A value payload's leaves counted by kind, as the summary line ends: "; 3 leaves: 2 dtype, 1 mesh". */
function leafSummary(inspection: Inspection): string {
  if (inspection.kind !== "value") return "";
  const counts = new Map<string, number>();
  for (const { kind } of inspection.values) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const kinds = [...counts].map(([kind, n]) => `${n} ${kind}`).join(", ");
  const n = inspection.values.length;
  return `; ${n} ${n === 1 ? "leaf" : "leaves"}${n ? `: ${kinds}` : ""}`;
}

interface Referrer {
  ref: number;
  where: string;
  leaf: boolean;
}

function specsReferrers(bytes: Uint8Array) {
  decodeSpecs(bytes);
  const message = SpecsPayload.decode(bytes);
  const referrers = leafReferrers(message.specs, "specs", message.header?.minorVersion);
  return {
    entries: message.table?.entries ?? [],
    referrers,
    keyPools: treeKeyPools({ specs: message.specs?.treedef }),
    leafCopies: treeLeafCopies({ specs: message.specs }, referrers),
  };
}

function programReferrers(bytes: Uint8Array) {
  decodeProgram(bytes);
  const message = ProgramPayload.decode(bytes);
  const referrers: Referrer[] = [
    ...(message.devices !== undefined
      ? [{ ref: message.devices, where: "devices", leaf: false }]
      : []),
    ...leafReferrers(message.inputSpecs, "input", message.header?.minorVersion),
    ...leafReferrers(message.outputSpecs, "output", message.header?.minorVersion),
  ];
  const fn = message.function?.function;
  if (fn?.$case === "pickled") {
    for (const [i, ref] of fn.value.refs.entries()) {
      referrers.push({ ref, where: `function.pickled.refs[${i}]`, leaf: false });
    }
  }
  const trees = { input: message.inputSpecs?.treedef, output: message.outputSpecs?.treedef };
  return {
    entries: message.table?.entries ?? [],
    referrers,
    keyPools: treeKeyPools(trees),
    leafCopies: treeLeafCopies(
      { input: message.inputSpecs, output: message.outputSpecs },
      referrers,
    ),
  };
}

/** A value's leaves, each described, and the table entries they refer to (as leaves, or from a pickle). */
function valueReferrers(bytes: Uint8Array) {
  const value = decodeValue(bytes);
  const message = ValuePayload.decode(bytes);
  const tree = message.value?.treedef;
  const ctx = { path: "value", limits: DEFAULT_LIMITS, minorVersion: message.header?.minorVersion };
  const written = message.value?.leaves ?? [];
  const leaves = tree ? expandLeaves(written, checkTree(tree, ctx).leafCopies) : written;
  const paths = leafPaths(value.treedef.root);
  const referrers: Referrer[] = [];
  const values = leaves.map((leaf, i): ValueLeafRow => {
    const { kind, text } = describeValueLeaf(value.leaves[i]);
    const one = leaf.leaf;
    if (one?.$case === "entry") referrers.push({ ref: one.value, where: "value", leaf: true });
    if (one?.$case === "pickled") {
      for (const [j, ref] of one.value.refs.entries())
        referrers.push({ ref, where: `value.leaves[${i}].pickled.refs[${j}]`, leaf: false });
    }
    return { path: paths[i], entry: one?.$case === "entry" ? one.value : null, kind, text };
  });
  const keyPools = treeKeyPools({ value: tree });
  return { entries: message.table?.entries ?? [], referrers, values, keyPools };
}

/** How each payload kind's table entries are referred to. */
const REFERRERS: Record<
  PayloadKindName,
  (bytes: Uint8Array) => {
    entries: Entry[];
    referrers: Referrer[];
    values?: ValueLeafRow[];
    keyPools: KeyPoolRow[];
    leafCopies?: LeafCopiesRow[];
  }
> = { specs: specsReferrers, program: programReferrers, value: valueReferrers };

/** Each tree's key pool, by the tree's name; a tree the payload lacks is left out. */
function treeKeyPools(trees: Record<string, TreeDef | undefined>): KeyPoolRow[] {
  return Object.entries(trees).flatMap(([tree, treedef]) =>
    treedef ? [{ tree, pool: keyPoolView(treedef, tree) }] : [],
  );
}

/**
 * How each specs tree with leaf copies writes its leaves, by the tree's name (its leaves
 * counted among the referrers, which name it); a tree without copies is left out.
 */
function treeLeafCopies(
  trees: Record<string, SpecsMsg | undefined>,
  referrers: Referrer[],
): LeafCopiesRow[] {
  return Object.entries(trees).flatMap(([tree, specs]) => {
    if (!specs?.leafCopies.length) return [];
    const leaves = referrers.filter((r) => r.leaf && r.where === tree).length;
    const view = leafCopiesView(specs, leaves);
    return view ? [{ tree, leaves: view }] : [];
  });
}

/**
 * Every leaf's reference, leaf copies' (1.3) and a REPEAT's leaves (1.1) included: the payload
 * was decoded already.
 */
function leafReferrers(specs: SpecsMsg | undefined, where: string, minor = 0): Referrer[] {
  if (!specs?.treedef) return [];
  const ctx = { path: where, limits: DEFAULT_LIMITS, minorVersion: minor };
  const refs = leafRefs(specs, checkTree(specs.treedef, ctx));
  return refs.map((ref) => ({ ref, where, leaf: true }));
}

/** The table references an entry holds. */
function entryRefs(entry: Entry): number[] {
  const kind = entry.kind;
  let ref: number | undefined;
  switch (kind?.$case) {
    case "mesh":
    case "gspmdSharding":
      ref = kind.value.deviceList;
      break;
    case "namedSharding":
      ref = kind.value.mesh;
      break;
    case "arraySpec":
      ref = kind.value.sharding;
      break;
  }
  return ref === undefined ? [] : [ref];
}
