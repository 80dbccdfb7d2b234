import { PayloadEnvelope, PayloadKind, ProgramPayload } from "../../gen/ts/colocated/v1/payload";
import { decodeProgram, decodeSpecs } from "../decode";
import { DecodeError } from "../errors";
import { FunctionRef, PickledFunction, type Specs } from "../model/program";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import type { Sharding } from "../model/sharding";
import type { TreeNode } from "../model/tree";
import { leafPaths } from "./describe-leaf";
import { type EntryRow, inspectPayload } from "./inspection";
import { type SectionBytes, sectionBytes } from "./sections";
import { type ShardingView, shardingView } from "./shardings";

/** A leaf as the inspector lists it. */
export interface LeafView {
  path: string;
  shape: number[];
  dtype: string;
  /** The id of its sharding in `shardings`, or null for none. */
  sharding: number | null;
}

/** One pytree of specs: "specs", or a program's "input" and "output". */
export interface PartView {
  name: string;
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
  header: { majorVersion: number; minorVersion: number; kind: string } | null;
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
  trees: { name: string; root: TreeNode; leaves: readonly ShapeDtypeStruct[] }[];
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
  const kind = view.header?.kind;
  try {
    if (kind === "specs" || kind === "program") {
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
    if (inspection.kind === "specs") {
      trees.push({ name: "specs", ...flat(decodeSpecs(bytes)) });
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
  addLeaves(view, trees);
  return { view, trees };
}

function flat(specs: Specs) {
  return { root: specs.treedef.root, leaves: specs.leaves };
}

function headerOf(bytes: Uint8Array): PayloadView["header"] {
  try {
    const header = PayloadEnvelope.decode(bytes).header;
    if (!header) return null;
    const kind =
      header.kind === PayloadKind.PAYLOAD_KIND_SPECS
        ? "specs"
        : header.kind === PayloadKind.PAYLOAD_KIND_PROGRAM
          ? "program"
          : `unknown (${header.kind})`;
    return { majorVersion: header.majorVersion, minorVersion: header.minorVersion, kind };
  } catch {
    return null;
  }
}

/** Every leaf with its path, and every distinct sharding (by the table entry leaves share). */
function addLeaves(view: PayloadView, trees: Inspected["trees"]): void {
  const uses = new Map<Sharding, { count: number; example: { path: string; shape: number[] } }>();
  const ids = new Map<Sharding, number>();
  for (const { name, root, leaves } of trees) {
    const paths = leafPaths(root);
    view.parts.push({
      name,
      leaves: leaves.map((leaf, i) => {
        const { sharding } = leaf;
        let id: number | null = null;
        if (sharding !== null) {
          const use = uses.get(sharding);
          if (use) use.count++;
          else
            uses.set(sharding, {
              count: 1,
              example: { path: `${name}${paths[i]}`, shape: [...leaf.shape] },
            });
          id = ids.get(sharding) ?? ids.size;
          ids.set(sharding, id);
        }
        return { path: paths[i], shape: [...leaf.shape], dtype: leaf.dtypeString, sharding: id };
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
