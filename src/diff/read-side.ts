/**
 * One payload as the diff reads it: decoded (so it is checked, and compared as the model it
 * lifts to), with each table object's index in its payload, which the result names (#2).
 * Python: diff/read_side.py, which reads the checked messages instead, since lifting there
 * needs this process to have the payload's devices.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import {
  ProgramPayloadSchema,
  SpecsPayloadSchema,
  ValuePayloadSchema,
} from "../../gen/es/colocated/v1/payload_pb";
import { ValuePayload } from "../../gen/ts/colocated/v1/payload";
import type { Entry } from "../../gen/ts/colocated/v1/table";
import { decodeProgram, decodeSpecs, decodeValue } from "../decode";
import type { Mesh } from "../model/mesh";
import type { Program, SharedObject } from "../model/program";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { GSPMDSharding, NamedSharding } from "../model/sharding";
import type { TreeNode } from "../model/tree";
import { PickledValue, type ValueLeaf } from "../model/value-leaf";
import { type PayloadKindName, payloadKindOf } from "../payload/header";
import { readPayloadRefs } from "./payload-refs";

/** One tree of a payload: "specs", a program's "input" and "output", or "value". */
export interface PartSide {
  name: string;
  root: TreeNode;
  /**
   * Each leaf's table entry, in leaf order; in a value, a leaf that is no table entry is
   * -2 - its position among the leaves written (`DiffSide.values`).
   */
  leafRefs: Int32Array;
}

/** A payload, decoded, with the table indices of what it holds. */
export interface DiffSide {
  kind: PayloadKindName;
  bytes: number;
  minorVersion: number;
  /** The table's objects by index: those the leaves, the devices and the function reach. */
  objects: (SharedObject | undefined)[];
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

const SCHEMAS: Readonly<Record<PayloadKindName, DescMessage>> = {
  specs: SpecsPayloadSchema,
  program: ProgramPayloadSchema,
  value: ValuePayloadSchema,
};

/** Decodes a payload for the diff; throws DecodeError as decoding does. */
export function readSide(bytes: Uint8Array): DiffSide {
  const kind = payloadKindOf(bytes);
  // Decoded first: what is read again below is then known to be valid.
  const decoded =
    kind === "specs"
      ? decodeSpecs(bytes)
      : kind === "program"
        ? decodeProgram(bytes)
        : decodeValue(bytes);
  const refs = readPayloadRefs(bytes, SCHEMAS[kind]);
  const { entries } = refs;
  const side: DiffSide = {
    kind,
    bytes: bytes.length,
    minorVersion: refs.minorVersion,
    objects: new Array<SharedObject | undefined>(entries.length),
    references: new Int32Array(entries.length).fill(-1),
    parts: [],
    values: [],
  };
  const part = (
    name: string,
    field: string,
    tree: { treedef: { root: TreeNode }; leaves: readonly ShapeDtypeStruct[] },
  ) => {
    const written = refs.leaves.get(field) ?? new Int32Array(0);
    side.parts.push({
      name,
      root: tree.treedef.root,
      leafRefs: leafRefs(side, entries, tree.leaves, written),
    });
  };
  if (kind === "specs") part("specs", "specs", decoded as ReturnType<typeof decodeSpecs>);
  else if (kind === "program") {
    const program = decoded as Program;
    part("input", "inputSpecs", program.inputs);
    if (program.outputs) part("output", "outputSpecs", program.outputs);
    side.devices = refs.devices as number;
    register(side, entries, program.devices, side.devices);
    const fn = refs.fn?.function;
    const fnRefs = fn?.$case === "pickled" ? fn.value.refs : [];
    side.fn = { value: program.function, refs: fnRefs };
    if ("refs" in program.function) {
      program.function.refs.forEach((object, i) => {
        register(side, entries, object, fnRefs[i]);
      });
    }
  } else {
    const value = decoded as ReturnType<typeof decodeValue>;
    side.parts.push({
      name: "value",
      root: value.treedef.root,
      leafRefs: valueRefs(side, entries, value.leaves, bytes),
    });
  }
  return side;
}

/**
 * A tree's leaves by their entries. Lifting gives one object per entry, and a REPEAT (1.1)
 * repeats leaves written before it, so the distinct leaf objects, in the order they first
 * appear, are the distinct written references in theirs; without a REPEAT, the leaves are
 * the written references themselves.
 */
function leafRefs(
  side: DiffSide,
  entries: readonly Entry[],
  leaves: readonly SharedObject[],
  written: Int32Array,
): Int32Array {
  if (written.length === leaves.length) {
    const seen = new Uint8Array(entries.length);
    for (let i = 0; i < leaves.length; i++) {
      if (seen[written[i]]) continue;
      seen[written[i]] = 1;
      register(side, entries, leaves[i], written[i]);
    }
    return written;
  }
  return byFirstAppearance(leaves, Array.from(written), (leaf, ref) =>
    register(side, entries, leaf, ref),
  );
}

/**
 * A value's leaves: a table entry by its index, any other leaf by -2 - its written position
 * (each such leaf is its own object, and a REPEAT's copies are copies of objects).
 */
function valueRefs(
  side: DiffSide,
  entries: readonly Entry[],
  leaves: readonly ValueLeaf[],
  bytes: Uint8Array,
): Int32Array {
  const messages = ValuePayload.decode(bytes).value?.leaves ?? [];
  const written = messages.map((message, i) =>
    message.leaf?.$case === "entry" ? message.leaf.value : -2 - i,
  );
  return byFirstAppearance(leaves, written, (leaf, ref) => {
    if (ref >= 0) return register(side, entries, leaf as SharedObject, ref);
    const message = messages[-2 - ref].leaf;
    const refs = message?.$case === "pickled" ? message.value.refs : [];
    side.values[-2 - ref] = { leaf, refs };
    if (leaf instanceof PickledValue) {
      leaf.refs.forEach((object, j) => {
        register(side, entries, object, refs[j]);
      });
    }
  });
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

/** Notes an object's index, and the indices of the objects it refers to, by its entry. */
function register(
  side: DiffSide,
  entries: readonly Entry[],
  object: SharedObject | null,
  index: number,
): void {
  for (let at: SharedObject | null = object, i = index; at && side.objects[i] === undefined; ) {
    side.objects[i] = at;
    const kind = entries[i].kind;
    let next: number | undefined;
    let inner: SharedObject | null = null;
    if (kind?.$case === "arraySpec") {
      next = kind.value.sharding;
      inner = (at as ShapeDtypeStruct).sharding;
    } else if (kind?.$case === "namedSharding") {
      next = kind.value.mesh;
      inner = (at as NamedSharding).mesh;
    } else if (kind?.$case === "mesh") {
      next = kind.value.deviceList;
      inner = (at as Mesh).devices;
    } else if (kind?.$case === "gspmdSharding") {
      next = kind.value.deviceList;
      inner = (at as GSPMDSharding).devices;
    }
    if (next === undefined) return;
    side.references[i] = next;
    at = inner;
    i = next;
  }
}
