/**
 * One payload as the diff reads it: decoded (so it is checked, and compared as the model it
 * lifts to), with each table object's index in its payload, which the result names (#2).
 * Decoding hands over the message and the table it read, so nothing is read twice.
 * Python: diff/read_side.py, which reads the checked messages instead, since lifting there
 * needs this process to have the payload's devices.
 */
import type { Entry } from "../../gen/ts/colocated/v1/table";
import { decodeWithTable } from "../decode";
import type { Program, SharedObject } from "../model/program";
import type { TreeNode } from "../model/tree";
import type { ValueLeaf } from "../model/value-leaf";
import type { PayloadKindName } from "../payload/header";
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

/** A payload, decoded, with the table indices of what it holds. */
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

/** Decodes a payload for the diff; throws DecodeError as decoding does. */
export function readSide(bytes: Uint8Array): DiffSide {
  const decoded = decodeWithTable(bytes);
  const { message, objects } = decoded;
  const entries = message.table?.entries ?? [];
  const side: DiffSide = {
    kind: decoded.kind,
    bytes: bytes.length,
    minorVersion: message.header?.minorVersion ?? 0,
    writer: message.header?.writer && liftWriter(message.header.writer),
    objects,
    references: referencesOf(entries),
    parts: [],
    values: [],
  };
  if (decoded.kind === "specs") {
    const { result, message } = decoded;
    side.parts.push(specsPart("specs", result, message.specs?.leaves ?? [], objects));
  } else if (decoded.kind === "program") {
    const { result: program, message } = decoded;
    side.parts.push(specsPart("input", program.inputs, message.inputSpecs?.leaves ?? [], objects));
    if (program.outputs) {
      const written = message.outputSpecs?.leaves ?? [];
      side.parts.push(specsPart("output", program.outputs, written, objects));
    }
    side.devices = message.devices as number;
    const fn = message.function?.function;
    side.fn = { value: program.function, refs: fn?.$case === "pickled" ? fn.value.refs : [] };
  } else {
    const { result: value, message } = decoded;
    const written = message.value?.leaves ?? [];
    const refs = written.map((m, i) => (m.leaf?.$case === "entry" ? m.leaf.value : -2 - i));
    const leafRefs = byFirstAppearance(value.leaves, refs, (leaf, ref) => {
      if (ref >= 0) return;
      const m = written[-2 - ref].leaf;
      side.values[-2 - ref] = { leaf, refs: m?.$case === "pickled" ? m.value.refs : [] };
    });
    side.parts.push({ name: "value", root: value.treedef.root, leafRefs });
  }
  return side;
}

/**
 * A tree of array specs by its leaves' entries. Without a REPEAT (1.1), the leaves are the
 * written references themselves; a REPEAT repeats leaves written before it, and each leaf is
 * the one object lifted from its entry.
 */
function specsPart(
  name: string,
  tree: { treedef: { root: TreeNode }; leaves: readonly SharedObject[] },
  written: readonly number[],
  objects: readonly SharedObject[],
): PartSide {
  const { leaves } = tree;
  if (written.length === leaves.length) return { name, root: tree.treedef.root, leafRefs: written };
  const index = new Map(objects.map((object, i) => [object, i]));
  const leafRefs = leaves.map((leaf) => index.get(leaf) as number);
  return { name, root: tree.treedef.root, leafRefs };
}

/** Each leaf's written reference: the n-th distinct leaf object has the n-th distinct reference. */
function byFirstAppearance<T>(
  leaves: readonly T[],
  written: readonly number[],
  found: (leaf: T, ref: number) => void,
): Int32Array {
  const out = new Int32Array(leaves.length);
  const known = new Map<T, number>();
  const taken = new Set<number>();
  let w = 0;
  for (let i = 0; i < leaves.length; i++) {
    let ref = known.get(leaves[i]);
    if (ref === undefined) {
      while (taken.has(written[w])) w++;
      ref = written[w];
      taken.add(ref);
      known.set(leaves[i], ref);
      found(leaves[i], ref);
    }
    out[i] = ref;
  }
  return out;
}

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
