/**
 * Valid payloads for the bad-payload corpus to break, and the edits that break them. An edit
 * sets values by dotted path on `{ m: message, e: entry values }`, so `{ "e.3.dtype": 999 }`
 * gives table entry 3 (an ArraySpec) an unknown dtype; a path ending in `push` appends the
 * value, one ending in `pop` drops that many items from the end.
 */
import { ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { NodeKind } from "../gen/ts/colocated/v1/tree";
import {
  DeviceList,
  encodeProgram,
  encodeSpecs,
  FunctionRef,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  treeFlatten,
  tuple,
} from "../src";
import { range } from "./fixtures";

/** The base payloads are of colocated.v1.0; a case of a newer construct sets the header. */
const V1_0 = { targetMinorVersion: 0 };

/** Bytes for a decoder. */
export interface Payload {
  decoder: "specs" | "program";
  bytes: () => Uint8Array;
}

/** Values to set, by dotted path from `{ m: message, e: entry values }`. */
export type Edit = Record<string, unknown>;

/**
 * The base specs payload. Entries: [0] devices 0..7, [1] 2x4 mesh (x Explicit, y Auto),
 * [2] NamedSharding P("x"), [3] ArraySpec, [4] SingleDeviceSharding(20), [5] ArraySpec,
 * [6] devices 8..15, [7] GSPMD 2x4 explicit tiles, [8] ArraySpec. Tree: {a, b: [.], c: (., None)}.
 */
function baseSpecs(): SpecsPayload {
  const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"], ["Explicit", "Auto"]);
  const gspmd = new GSPMDSharding(new DeviceList(range(8, 8)), {
    type: "other",
    tileDims: [2, 4],
    tileDevices: [3, 1, 0, 2, 4, 5, 6, 7],
  });
  const sharding = new NamedSharding(mesh, new PartitionSpec("x"));
  const tree = {
    a: new ShapeDtypeStruct([8, 4], "float32", sharding),
    b: [new ShapeDtypeStruct([2], "int8", new SingleDeviceSharding(20))],
    c: tuple(new ShapeDtypeStruct([8, 8], "bfloat16", gspmd), null),
  };
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return SpecsPayload.decode(encodeSpecs(treedef, leaves, V1_0));
}

/** The base program payload: train.step on devices 0..7, one input leaf on a 2x4 mesh. */
function baseProgram(): ProgramPayload {
  const devices = new DeviceList(range(8));
  const sharding = new NamedSharding(new Mesh(devices, [2, 4], ["x", "y"]), new PartitionSpec());
  const inputs = treeFlatten<ShapeDtypeStruct>([new ShapeDtypeStruct([8], "int8", sharding)]);
  const program = { function: new FunctionRef("train", "step"), inputs, devices };
  return ProgramPayload.decode(encodeProgram(program, V1_0));
}

/** The base specs payload with these edits. */
export function specs(...edits: Edit[]): Payload {
  return {
    decoder: "specs",
    bytes: () => SpecsPayload.encode(edited(baseSpecs(), edits)).finish(),
  };
}

/** The base program payload with these edits. */
export function program(...edits: Edit[]): Payload {
  const bytes = () => ProgramPayload.encode(edited(baseProgram(), edits)).finish();
  return { decoder: "program", bytes };
}

/** Raw bytes for a decoder. */
export function raw(decoder: Payload["decoder"], bytes: number[] | Uint8Array): Payload {
  return { decoder, bytes: () => new Uint8Array(bytes) };
}

/** A payload's bytes with the first occurrence of `from` replaced by `to`. */
export function patched(payload: Payload, from: number[], to: number[]): Payload {
  const bytes = () => {
    const data = Buffer.from(payload.bytes());
    const at = data.indexOf(Buffer.from(from));
    if (at < 0) throw new Error("pattern not found");
    const parts = [data.subarray(0, at), Buffer.from(to), data.subarray(at + from.length)];
    return new Uint8Array(Buffer.concat(parts));
  };
  return { ...payload, bytes };
}

/** A tree's columns: `depth` nested one-child lists around one leaf. */
export function nested(depth: number): Edit {
  const kinds = [...Array(depth).fill(NodeKind.NODE_KIND_LIST), NodeKind.NODE_KIND_LEAF];
  return { "m.specs.treedef.kinds": kinds, "m.specs.treedef.arities": Array(depth).fill(1) };
}

/** A tree's columns, every other column emptied, and its leaves all entry 3. */
export function tree(columns: Record<string, unknown>, leaves: number): Edit {
  const empty = { arities: [], strings: [], dictKeys: [], typeRefs: [], nodeTypes: [] };
  const edit: Edit = { "m.specs.leaves": Array(leaves).fill(3) };
  for (const [name, value] of Object.entries({ ...empty, ...columns }))
    edit[`m.specs.treedef.${name}`] = value;
  return edit;
}

function edited<M extends SpecsPayload | ProgramPayload>(message: M, edits: Edit[]): M {
  const root = { m: message, e: message.table?.entries.map((e) => e.kind?.value) };
  for (const edit of edits) {
    for (const [path, value] of Object.entries(edit)) set(root, path.split("."), value);
  }
  return message;
}

function set(target: unknown, path: string[], value: unknown): void {
  // biome-ignore lint/suspicious/noExplicitAny: edits reach anywhere into a message
  let at: any = target;
  for (const key of path.slice(0, -1)) at = at[key];
  const last = path[path.length - 1];
  if (last === "push") at.push(value);
  else if (last === "pop") at.splice(-Number(value));
  else at[last] = value;
}
