import type { ProgramPayload, SpecsPayload, ValuePayload } from "../gen/ts/colocated/v1/payload";
import type { Entry } from "../gen/ts/colocated/v1/table";
import type { PickledFunction, Program, SharedObject } from "./model/program";
import type { ShapeDtypeStruct } from "./model/shape-dtype-struct";
import type { PyTreeDef } from "./model/tree";
import type { PickledValue, ValueLeaf } from "./model/value-leaf";
import type { Writer } from "./payload/writer";

/**
 * What a decoded payload held beyond its model, remembered so that encoding the same objects
 * again writes it back: the table entries' unknown fields, the whole table in its order (so
 * entries of unknown kinds keep their indices), and the envelope messages' unknown fields.
 * Weak maps: the memory goes with the objects.
 */

const entryOrigins = new WeakMap<SharedObject, Entry>();

/** Remembers the entry an object was lifted from, when that entry has fields we do not know. */
export function rememberEntry(object: SharedObject, entry: Entry): void {
  entryOrigins.set(object, entry);
}

/** The entry an object was lifted from, if it carried unknown fields. */
export function entryOrigin(object: SharedObject): Entry | undefined {
  return entryOrigins.get(object);
}

/** A decoded payload: its message, its lifted table, and the objects handed to the caller. */
export interface PayloadOrigin<M> {
  message: M;
  table: readonly SharedObject[];
}

/** A pytree split into structure and leaves: specs, or a value. */
interface TreeSnapshot<L> {
  treedef: PyTreeDef;
  leaves: readonly L[];
}

type SpecsSnapshot = TreeSnapshot<ShapeDtypeStruct>;

interface ProgramSnapshot {
  function: Program["function"];
  devices: Program["devices"];
  inputs: SpecsSnapshot;
  outputs?: SpecsSnapshot;
}

const programOrigins = new WeakMap<
  Program,
  PayloadOrigin<ProgramPayload> & { was: ProgramSnapshot }
>();

/** Where the payloads of one pytree kind came from, by their treedef, with the leaves decoded. */
class TreeOrigins<M, L> {
  readonly #origins = new WeakMap<PyTreeDef, PayloadOrigin<M> & { leaves: L[] }>();

  remember(tree: TreeSnapshot<L>, origin: PayloadOrigin<M>): void {
    this.#origins.set(tree.treedef, { ...origin, leaves: [...tree.leaves] });
  }

  /** The payload of a tree, if its leaves are still exactly those decoded. */
  of(tree: TreeSnapshot<L>): PayloadOrigin<M> | undefined {
    const origin = this.#origins.get(tree.treedef);
    return origin && sameItems(origin.leaves, tree.leaves) ? origin : undefined;
  }
}

const specsOrigins = new TreeOrigins<SpecsPayload, ShapeDtypeStruct>();
const valueOrigins = new TreeOrigins<ValuePayload, ValueLeaf>();

/** Remembers the payload a decoded specs treedef came from. */
export function rememberSpecs(specs: SpecsSnapshot, origin: PayloadOrigin<SpecsPayload>): void {
  specsOrigins.remember(specs, origin);
}

/** The payload these specs were decoded from, if they are still exactly what was decoded. */
export function specsOrigin(specs: SpecsSnapshot): PayloadOrigin<SpecsPayload> | undefined {
  return specsOrigins.of(specs);
}

/** Remembers the payload a decoded value's treedef came from. */
export function rememberValue(
  value: TreeSnapshot<ValueLeaf>,
  origin: PayloadOrigin<ValuePayload>,
): void {
  valueOrigins.remember(value, origin);
}

/** The payload this value was decoded from, if it is still exactly what was decoded. */
export function valueOrigin(
  value: TreeSnapshot<ValueLeaf>,
): PayloadOrigin<ValuePayload> | undefined {
  return valueOrigins.of(value);
}

/** Remembers the payload a decoded program came from. */
export function rememberProgram(program: Program, origin: PayloadOrigin<ProgramPayload>): void {
  programOrigins.set(program, { ...origin, was: snapshot(program) });
}

/** The payload this program was decoded from, if it is still exactly what was decoded. */
export function programOrigin(program: Program): PayloadOrigin<ProgramPayload> | undefined {
  const origin = programOrigins.get(program);
  if (!origin) return undefined;
  const { was } = origin;
  const same =
    was.function === program.function &&
    was.devices === program.devices &&
    sameSpecs(was.inputs, program.inputs) &&
    sameSpecs(was.outputs, program.outputs);
  return same ? origin : undefined;
}

function snapshot(program: Program): ProgramSnapshot {
  const copy = (specs?: SpecsSnapshot) =>
    specs && { treedef: specs.treedef, leaves: [...specs.leaves] };
  return {
    function: program.function,
    devices: program.devices,
    inputs: copy(program.inputs) as SpecsSnapshot,
    outputs: copy(program.outputs),
  };
}

function sameSpecs(a?: SpecsSnapshot, b?: SpecsSnapshot): boolean {
  if (!a || !b) return a === b;
  return a.treedef === b.treedef && sameItems(a.leaves, b.leaves);
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

/** The writer of the payload each decoded pickle came in, when it named one (1.3). */
const pickleWriters = new WeakMap<PickledFunction | PickledValue, Writer>();

/** Remembers who wrote a decoded pickle, so that passing it on names them, not this process. */
export function rememberPickleWriter(pickle: PickledFunction | PickledValue, writer: Writer): void {
  pickleWriters.set(pickle, writer);
}

/** Who wrote a decoded pickle, if its payload said. */
export function pickleWriter(pickle: PickledFunction | PickledValue): Writer | undefined {
  return pickleWriters.get(pickle);
}
