/**
 * One payload as the diff reads it: checked as decoding checks it (bytes checked before are not
 * checked again, as decoding them again does not), its table lifted (so entries are compared as
 * the model they lift to), with each table object's index in its payload, which the result
 * names (#2). Of its parts, only what the diff compares is lifted: the trees (lifted once per
 * checked payload), the function, a value's leaves; a specs leaf is its table entry.
 * Python: diff/read_side.py, which reads the checked messages instead, since lifting there
 * needs this process to have the payload's devices.
 */
import type {
  FunctionMessage,
  ProgramPayload,
  Specs as SpecsMessage,
  Value as ValueMessage,
  ValuePayload,
} from "../../gen/ts/colocated/v1/payload";
import type { Entry } from "../../gen/ts/colocated/v1/table";
import type { TreeDef } from "../../gen/ts/colocated/v1/tree";
import { type CheckedTable, decodeTable, type ProgramFacts } from "../decode";
import type { TreeDefFacts } from "../entries/treedef";
import * as treedef from "../entries/treedef";
import type { Program, SharedObject } from "../model/program";
import type { TreeNode } from "../model/tree";
import type { ValueLeaf } from "../model/value-leaf";
import * as fn from "../payload/function";
import type { PayloadKindName } from "../payload/header";
import { leafRefs } from "../payload/specs";
import * as valueLeaf from "../payload/value-leaf";
import { lift as liftWriter, type Writer } from "../payload/writer";

/** One tree of a payload: "specs", a program's "input" and "output", or "value". */
export interface PartSide {
  name: string;
  root: TreeNode;
  /**
   * Each leaf's table entry, in leaf order; in a value, a leaf that is no table entry is
   * -2 - its position among the leaves written (`DiffSide.values`).
   */
  leafRefs: ArrayLike<number>;
}

/** A payload, checked, its table lifted, with the table indices of what it holds. */
export interface DiffSide {
  kind: PayloadKindName;
  bytes: number;
  minorVersion: number;
  /** Who wrote it, when its header says (1.3). */
  writer?: Writer;
  /** The table's objects by index, one per entry. */
  objects: readonly SharedObject[];
  /** By index, the entry each one refers to (a sharding, a mesh, a device list), -1 for none. */
  references: Int32Array;
  parts: PartSide[];
  /** A value's leaves that are no table entries, by their position among those written, with
   * the entries a pickled one refers to. */
  values: { leaf: ValueLeaf; refs: readonly number[] }[];
  /** A program's function, and the entries a pickled one refers to. */
  fn?: { value: Program["function"]; refs: readonly number[] };
  /** A program's device list entry. */
  devices?: number;
}

/** Reads a payload for the diff; throws DecodeError as decoding does. */
export function readSide(bytes: Uint8Array): DiffSide {
  const checked = decodeTable(bytes);
  const { message, objects } = checked;
  const side: DiffSide = {
    kind: checked.kind,
    bytes: bytes.length,
    minorVersion: message.header?.minorVersion ?? 0,
    writer: message.header?.writer && liftWriter(message.header.writer),
    objects,
    references: referencesOf(message.table?.entries ?? []),
    parts: [],
    values: [],
  };
  if (checked.kind === "specs") {
    side.parts.push(specsPart("specs", checked.message.specs as SpecsMessage, checked.facts));
  } else if (checked.kind === "program") readProgram(side, checked);
  else readValue(side, checked);
  return side;
}

/** A program's parts: its specs, devices and function. */
function readProgram(
  side: DiffSide,
  { message, objects, facts }: CheckedTable<ProgramPayload, ProgramFacts>,
): void {
  side.parts.push(specsPart("input", message.inputSpecs as SpecsMessage, facts.inputs));
  if (message.outputSpecs && facts.outputs) {
    side.parts.push(specsPart("output", message.outputSpecs, facts.outputs));
  }
  side.devices = message.devices as number;
  const written = message.function as FunctionMessage;
  const refs = written.function?.$case === "pickled" ? written.function.value.refs : [];
  side.fn = { value: fn.lift(written, { objects, facts: undefined }), refs };
}

/** A value's tree and leaves: an entry by its index, any other leaf lifted, by -2 - its position. */
function readValue(
  side: DiffSide,
  { message, objects, facts }: CheckedTable<ValuePayload, TreeDefFacts>,
): void {
  const value = message.value as ValueMessage;
  const written = value.leaves.map((m, i) => (m.leaf?.$case === "entry" ? m.leaf.value : -2 - i));
  value.leaves.forEach((m, i) => {
    if (written[i] >= 0) return;
    const refs = m.leaf?.$case === "pickled" ? m.leaf.value.refs : [];
    side.values[i] = { leaf: valueLeaf.lift(m, objects), refs };
  });
  const root = treedef.lift(value.treedef as TreeDef, { facts }).root;
  // A REPEAT (1.1) copies leaves written before it, and their references.
  side.parts.push({
    name: "value",
    root,
    leafRefs: treedef.expandLeaves(written, facts.leafCopies),
  });
}

/** A tree of array specs: its root, lifted once per checked payload, and its leaves' entries. */
function specsPart(name: string, specs: SpecsMessage, facts: TreeDefFacts): PartSide {
  const root = treedef.lift(specs.treedef as TreeDef, { facts }).root;
  return { name, root, leafRefs: specsLeafRefs(specs, facts) };
}

/**
 * Each leaf's ArraySpec entry, in leaf order: the references written, leaf copies (1.3) made,
 * then a REPEAT's (1.1) copies. The one place the diff reads a Specs message's leaves, once per
 * checked payload (its messages are kept with its checks, src/decode.ts).
 */
function specsLeafRefs(specs: SpecsMessage, facts: TreeDefFacts): Int32Array {
  let refs = LEAF_REFS.get(specs);
  if (refs === undefined) {
    refs = Int32Array.from(leafRefs(specs, facts));
    LEAF_REFS.set(specs, refs);
  }
  return refs;
}

/** By Specs message, its leaves' entries: kept while the message is (with its checks). */
const LEAF_REFS = new WeakMap<SpecsMessage, Int32Array>();

/** The entry each entry refers to: an array spec's sharding, a sharding's mesh, a mesh's devices. */
function referencesOf(entries: readonly Entry[]): Int32Array {
  const out = new Int32Array(entries.length).fill(-1);
  entries.forEach(({ kind }, i) => {
    if (kind?.$case === "arraySpec") out[i] = kind.value.sharding ?? -1;
    else if (kind?.$case === "namedSharding") out[i] = kind.value.mesh ?? -1;
    else if (kind?.$case === "mesh" || kind?.$case === "gspmdSharding") {
      out[i] = kind.value.deviceList ?? -1;
    }
  });
  return out;
}
