import { PayloadEnvelope, ProgramPayload } from "../../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs, decodeValue } from "../decode";
import { DecodeError } from "../errors";
import { FunctionRef, PickledFunction, type Specs } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import {
  GSPMDSharding,
  NamedSharding,
  type Sharding,
  SingleDeviceSharding,
} from "../model/sharding";
import type { TreeNode } from "../model/tree";
import type { Value, ValueLeaf } from "../model/value-leaf";
import { PAYLOAD_KINDS } from "../payload/header";
import { lift as liftWriter, type Writer } from "../payload/writer";
import { describeValueLeaf, leafPaths } from "./describe-leaf";
import { type EntryRow, inspectPayload, type KeyPoolRow, type LeafCopiesRow } from "./inspection";
import type { KeyPoolView } from "./key-pool";
import type { LeafCopiesView } from "./leaf-copies";
import { type SectionBytes, sectionBytes } from "./sections";
import { exampleShape, type ShardingView, shardingView } from "./shardings";

/** A leaf that is an array spec (every leaf of specs, and a value's ShapeDtypeStruct). */
export interface ArrayLeafView {
  path: string;
  shape: number[];
  dtype: string;
  /** The id of its sharding in `shardings`, or null for none. */
  sharding: number | null;
}

/** A value payload's leaf that is no array spec, by kind and in one line (inspect's words). */
export interface ObjectLeafView {
  path: string;
  /** Its kind: a table object's entry kind, or dtype, prngImpl, function, pickled. */
  kind: string;
  text: string;
  /** For a sharding leaf, its id in `shardings`; otherwise null. */
  sharding: number | null;
}

/** A leaf as the inspector lists it. */
export type LeafView = ArrayLeafView | ObjectLeafView;

/** One pytree: "specs", a program's "input" and "output", or a "value". */
export interface PartView {
  name: string;
  /** How its dict keys are written. */
  keys: KeyPoolView;
  /** How its leaves are written, when some are leaf copies (1.3). */
  leafCopies?: LeafCopiesView;
  leaves: LeafView[];
}

/** A program's function. */
export type FunctionView =
  | { kind: "name"; name: string }
  | { kind: "pickled"; pickleBytes: number; refs: number[] }
  | { kind: "unknown"; bytes: number };

/** Everything the inspector page shows, as plain data: also what `inspect --json` prints. */
export interface PayloadView {
  payloadBytes: number;
  /** What could be read of the header, or null when not even that could. */
  header: { majorVersion: number; minorVersion: number; kind: string; writer?: Writer } | null;
  sections: SectionBytes | null;
  /** Why the payload does not decode, or null. */
  error: { path: string; code: string; detail: string } | null;
  table: (Omit<EntryRow, "leaves"> & { leaves: number })[];
  parts: PartView[];
  shardings: ShardingView[];
  function: FunctionView | null;
  /** A program's device count. */
  devices: number | null;
}

/** The view and the trees it came from, which the page's outline walks. */
export interface Inspected {
  view: PayloadView;
  trees: { name: string; root: TreeNode; leaves: readonly ValueLeaf[] }[];
}

/** Decodes a payload (with the library's default limits) into what the inspector shows; never throws a DecodeError. */
export function inspectView(bytes: Uint8Array): Inspected {
  const view: PayloadView = {
    payloadBytes: bytes.length,
    header: headerOf(bytes),
    sections: null,
    error: null,
    table: [],
    parts: [],
    shardings: [],
    function: null,
    devices: null,
  };
  const trees: Inspected["trees"] = [];
  let keyPools: KeyPoolRow[] = [];
  let leafCopies: LeafCopiesRow[] = [];
  const kind = view.header?.kind;
  try {
    if (kind === "specs" || kind === "program" || kind === "value") {
      try {
        view.sections = sectionBytes(bytes, kind);
      } catch {
        // Bytes that are not even protobuf have no sections; decoding says why below.
      }
    }
    const inspection = inspectPayload(bytes);
    view.table = inspection.rows.map((row) => ({
      ...row,
      leaves: Object.values(row.leaves).reduce((a, b) => a + b, 0),
    }));
    keyPools = inspection.keyPools;
    leafCopies = inspection.leafCopies;
    if (inspection.kind === "specs") {
      trees.push({ name: "specs", ...flat(decodeSpecs(bytes)) });
    } else if (inspection.kind === "value") {
      trees.push({ name: "value", ...flat(decodeValue(bytes)) });
    } else {
      const program = decodeProgram(bytes);
      trees.push({ name: "input", ...flat(program.inputs) });
      if (program.outputs) trees.push({ name: "output", ...flat(program.outputs) });
      view.devices = program.devices.size;
      view.function = functionView(program.function, bytes);
    }
  } catch (error) {
    if (!(error instanceof DecodeError)) throw error;
    view.error = { path: error.path, code: error.code, detail: error.detail };
    return { view, trees: [] };
  }
  addLeaves(view, trees, keyPools, leafCopies);
  return { view, trees };
}

function flat(tree: Specs | Value) {
  return { root: tree.treedef.root, leaves: tree.leaves };
}

function headerOf(bytes: Uint8Array): PayloadView["header"] {
  try {
    const header = PayloadEnvelope.decode(bytes).header;
    if (!header) return null;
    const kind = PAYLOAD_KINDS.name(header.kind) ?? `unknown (${header.kind})`;
    const { majorVersion, minorVersion } = header;
    return header.writer
      ? { majorVersion, minorVersion, kind, writer: liftWriter(header.writer) }
      : { majorVersion, minorVersion, kind };
  } catch {
    return null;
  }
}

/**
 * Every tree's key pool, how its leaves are written (with leaf copies), its leaves with their
 * paths, and every distinct sharding (by the table
 * entry leaves share): an array spec's, or a value's sharding leaf, whose example shape has one
 * element per shard.
 */
function addLeaves(
  view: PayloadView,
  trees: Inspected["trees"],
  keyPools: KeyPoolRow[],
  leafCopies: LeafCopiesRow[],
): void {
  const uses = new Map<Sharding, { count: number; example: { path: string; shape: number[] } }>();
  const ids = new Map<Sharding, number>();
  const use = (sharding: Sharding, path: string, shape: readonly number[]): number => {
    const known = uses.get(sharding);
    if (known) known.count++;
    else uses.set(sharding, { count: 1, example: { path, shape: [...shape] } });
    const id = ids.get(sharding) ?? ids.size;
    ids.set(sharding, id);
    return id;
  };
  for (const { name, root, leaves } of trees) {
    const paths = leafPaths(root);
    const copies = leafCopies.find((row) => row.tree === name)?.leaves;
    view.parts.push({
      name,
      keys: (keyPools.find((row) => row.tree === name) as KeyPoolRow).pool,
      ...(copies ? { leafCopies: copies } : {}),
      leaves: leaves.map((leaf, i): LeafView => {
        const path = paths[i];
        if (!(leaf instanceof ShapeDtypeStruct)) {
          const { kind, text } = describeValueLeaf(leaf);
          const sharding = isSharding(leaf)
            ? use(leaf, `${name}${path}`, exampleShape(leaf))
            : null;
          return { path, kind, text, sharding };
        }
        const { sharding } = leaf;
        const id = sharding === null ? null : use(sharding, `${name}${path}`, leaf.shape);
        return { path, shape: [...leaf.shape], dtype: leaf.dtypeString, sharding: id };
      }),
    });
  }
  for (const [sharding, id] of ids) {
    const use = uses.get(sharding) as { count: number; example: { path: string; shape: number[] } };
    view.shardings.push(shardingView(id, sharding, use.count, use.example));
  }
}

function functionView(fn: unknown, bytes: Uint8Array): FunctionView {
  if (fn instanceof FunctionRef) return { kind: "name", name: `${fn.module}.${fn.qualname}` };
  if (fn instanceof PickledFunction) {
    const message = ProgramPayload.decode(bytes).function?.function;
    const refs = message?.$case === "pickled" ? [...message.value.refs] : [];
    return { kind: "pickled", pickleBytes: fn.pickle.length, refs };
  }
  return { kind: "unknown", bytes: (fn as { bytes: Uint8Array }).bytes.length };
}

/** Whether a value's leaf is a sharding, which the page draws. */
export function isSharding(leaf: ValueLeaf): leaf is Sharding {
  return (
    leaf instanceof NamedSharding ||
    leaf instanceof SingleDeviceSharding ||
    leaf instanceof GSPMDSharding
  );
}
