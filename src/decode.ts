import {
  type FunctionMessage,
  type Header,
  PayloadKind,
  ProgramPayload,
  type Specs as SpecsMessage,
  SpecsPayload,
  type Value as ValueMessage,
  ValuePayload,
} from "../gen/ts/colocated/v1/payload";
import type { SharedObjectTable } from "../gen/ts/colocated/v1/table";
import { DEVICE_LIST } from "./entries/device-list";
import type { TreeDefFacts } from "./entries/treedef";
import { DecodeError } from "./errors";
import { type DecodeLimits, resolveLimits } from "./limits";
import type { DeviceList } from "./model/device-list";
import { PickledFunction, type Program, type SharedObject, type Specs } from "./model/program";
import { PickledValue, type Value } from "./model/value-leaf";
import * as fn from "./payload/function";
import { type DecodeOptions, parsePayload, payloadKindOf } from "./payload/header";
import * as specs from "./payload/specs";
import * as value from "./payload/value";
import * as writer from "./payload/writer";
import {
  type PayloadOrigin,
  rememberPickleWriter,
  rememberProgram,
  rememberSpecs,
  rememberValue,
} from "./provenance";
import { type CheckContext, checkTable } from "./table/check-table";
import { liftTable } from "./table/lift-table";

/** Decodes SpecsPayload bytes into a treedef and its ShapeDtypeStruct leaves; throws only DecodeError. */
export function decodeSpecs(bytes: Uint8Array, options: DecodeOptions = {}): Specs {
  const kind = PayloadKind.PAYLOAD_KIND_SPECS;
  return decodePayload(SpecsPayload, kind, bytes, options, SPECS);
}

/** Decodes ProgramPayload bytes into a Program; throws only DecodeError. */
export function decodeProgram(bytes: Uint8Array, options: DecodeOptions = {}): Program {
  const kind = PayloadKind.PAYLOAD_KIND_PROGRAM;
  return decodePayload(ProgramPayload, kind, bytes, options, PROGRAM);
}

/** Decodes ValuePayload bytes (colocated.v1.2) into a treedef and its leaves; throws only DecodeError. */
export function decodeValue(bytes: Uint8Array, options: DecodeOptions = {}): Value {
  const kind = PayloadKind.PAYLOAD_KIND_VALUE;
  return decodePayload(ValuePayload, kind, bytes, options, VALUE);
}

/** A payload checked, with its table lifted and its parts not: what the diff reads. */
export interface CheckedTable<M, F> {
  message: M;
  /** The table's objects by index, lifted anew. */
  objects: readonly SharedObject[];
  /** What the checks of its parts returned: a tree's facts, or a program's by part. */
  facts: F;
}

/** A payload of any kind, checked, with its table lifted. */
export type AnyCheckedTable =
  | ({ kind: "specs" } & CheckedTable<SpecsPayload, TreeDefFacts>)
  | ({ kind: "program" } & CheckedTable<ProgramPayload, ProgramFacts>)
  | ({ kind: "value" } & CheckedTable<ValuePayload, TreeDefFacts>);

/**
 * Checks a payload of the kind its header names, as decoding checks it (bytes checked before
 * are not checked again), and lifts its table but not its parts: the diff compares the
 * table's objects and lifts only what it compares of the parts. It reads the message it is
 * handed and never changes it.
 */
export function decodeTable(bytes: Uint8Array, options: DecodeOptions = {}): AnyCheckedTable {
  const kind = payloadKindOf(bytes);
  return onlyDecodeErrors(() => {
    if (kind === "specs") {
      const specsKind = PayloadKind.PAYLOAD_KIND_SPECS;
      return { kind, ...checkedTable(SpecsPayload, specsKind, bytes, options, SPECS) };
    }
    if (kind === "program") {
      const programKind = PayloadKind.PAYLOAD_KIND_PROGRAM;
      return { kind, ...checkedTable(ProgramPayload, programKind, bytes, options, PROGRAM) };
    }
    const valueKind = PayloadKind.PAYLOAD_KIND_VALUE;
    return { kind, ...checkedTable(ValuePayload, valueKind, bytes, options, VALUE) };
  });
}

const SPECS: PayloadParts<SpecsPayload, TreeDefFacts, Specs> = {
  check: (message, at) => specs.check(message.specs, at("specs")),
  lift: (message, objects, facts) => specs.lift(message.specs as SpecsMessage, { objects, facts }),
  remember: rememberSpecs,
};

const VALUE: PayloadParts<ValuePayload, TreeDefFacts, Value> = {
  check: (message, at) => value.check(message.value, at("value")),
  lift: (message, objects, facts) => {
    const lifted = value.lift(message.value as ValueMessage, { objects, facts });
    rememberWriter(message, lifted.leaves);
    return lifted;
  },
  remember: rememberValue,
};

/** The pickles among `parts` remember the writer their payload names (1.3), to pass it on. */
function rememberWriter(message: { header?: Header }, parts: readonly unknown[]): void {
  const named = message.header?.writer;
  if (!named) return;
  const by = writer.lift(named);
  for (const part of parts)
    if (part instanceof PickledFunction || part instanceof PickledValue)
      rememberPickleWriter(part, by);
}

/** Scans, parses and checks a payload: every check decoding makes before lifting. */
function checkPayload<M extends { header?: Header; table?: SharedObjectTable }, F, R>(
  type: { decode(input: Uint8Array): M },
  kind: PayloadKind,
  bytes: Uint8Array,
  options: DecodeOptions,
  limits: DecodeLimits,
  parts: PayloadParts<M, F, R>,
): CheckedPayload {
  const parsed = parsePayload(type, kind, bytes, { ...options, limits });
  const { message, unknownFields, packedIds } = parsed;
  const minorVersion = message.header?.minorVersion ?? 0;
  const refs = checkTable(message.table, limits, minorVersion, packedIds);
  const at = (path: string) => ({ index: refs.tableSize, path, refs, limits, minorVersion });
  const facts = parts.check(message, at);
  return { message, refs, facts, unknownFields };
}

/** The facts of a program's specs. */
export interface ProgramFacts {
  inputs: TreeDefFacts;
  outputs?: TreeDefFacts;
}

/** Checks a program's parts in field order: devices, function, input specs, output specs. */
function checkProgram(message: ProgramPayload, at: (path: string) => CheckContext): ProgramFacts {
  const { refs } = at("devices");
  refs.require(message.devices, refs.tableSize, "devices", DEVICE_LIST);
  fn.check(message.function, at("function"));
  const inputs = specs.check(message.inputSpecs, at("input_specs"));
  if (!message.outputSpecs) return { inputs };
  return { inputs, outputs: specs.check(message.outputSpecs, at("output_specs")) };
}

/** Lifts a checked program's parts. */
function liftProgram(
  message: ProgramPayload,
  objects: readonly SharedObject[],
  facts: ProgramFacts,
): Program {
  const part = <F>(f: F) => ({ objects, facts: f });
  const { outputSpecs } = message;
  const lifted = fn.lift(message.function as FunctionMessage, part(undefined));
  rememberWriter(message, [lifted]);
  return {
    function: lifted,
    inputs: specs.lift(message.inputSpecs as SpecsMessage, part(facts.inputs)),
    outputs: outputSpecs && facts.outputs && specs.lift(outputSpecs, part(facts.outputs)),
    devices: objects[message.devices as number] as DeviceList,
  };
}

const PROGRAM: PayloadParts<ProgramPayload, ProgramFacts, Program> = {
  check: checkProgram,
  lift: liftProgram,
  remember: rememberProgram,
};

/** How one payload kind checks and lifts its parts outside the table, and remembers newer fields. */
interface PayloadParts<M, F, R> {
  /** Checks the parts; `at(path)` is the context of a part, which may refer to every entry. */
  check: (message: M, at: (path: string) => CheckContext) => F;
  lift: (message: M, objects: readonly SharedObject[], facts: F) => R;
  remember: (result: R, origin: PayloadOrigin<M>) => void;
}

/**
 * Payloads checked before, by kind, options and bytes, with what checking them found: a program
 * sends the same specs on every call, and checking is a pure function of these. The messages
 * are handed out only to the diff (`decodeTable`), which reads them and never changes them.
 * The table's objects are lifted anew on every decode; the tree, immutable, is lifted once.
 * Bounded: payloads past CACHED_PAYLOAD_BYTES are not kept, and a cache that would pass
 * CACHED_PAYLOADS entries or CACHE_BUDGET bytes is emptied (no order to keep).
 */
const CHECKED = new Map<string, CheckedPayload>();
const CACHED_PAYLOADS = 64;
const CACHED_PAYLOAD_BYTES = 1 << 18;
/**
 * The payload bytes the cache holds at most, all entries together: what it keeps (the parsed
 * messages and facts) is several times the bytes, so this bounds its memory to tens of MiB.
 */
const CACHE_BUDGET = 1 << 22;
let cachedBytes = 0;
// Every byte is one code unit: distinct bytes are distinct keys.
const latin1 = new TextDecoder("latin1");

/** A payload that passed every check: its message, checked table, parts' facts, unknown fields. */
interface CheckedPayload {
  message: unknown;
  refs: ReturnType<typeof checkTable>;
  facts: unknown;
  unknownFields: number;
}

/** bytes → wire scan and header → checked table and parts → lifted table and parts. */
function decodePayload<M extends { header?: Header; table?: SharedObjectTable }, F, R>(
  type: { decode(input: Uint8Array): M },
  kind: PayloadKind,
  bytes: Uint8Array,
  options: DecodeOptions,
  parts: PayloadParts<M, F, R>,
): R {
  return onlyDecodeErrors(() => {
    const { message, objects, facts, unknownFields } = checkedTable(
      type,
      kind,
      bytes,
      options,
      parts,
    );
    const result = parts.lift(message, objects, facts);
    if (unknownFields > 0) parts.remember(result, { message, table: objects });
    return result;
  });
}

/** bytes → checked table and parts (checked before, or now) → lifted table. */
function checkedTable<M extends { header?: Header; table?: SharedObjectTable }, F, R>(
  type: { decode(input: Uint8Array): M },
  kind: PayloadKind,
  bytes: Uint8Array,
  options: DecodeOptions,
  parts: PayloadParts<M, F, R>,
): CheckedTable<M, F> & { unknownFields: number } {
  const limits = resolveLimits(options.limits);
  const key =
    bytes.length <= CACHED_PAYLOAD_BYTES
      ? `${kind} ${options.maxMinorVersion ?? ""} ${JSON.stringify(limits)} ${latin1.decode(bytes)}`
      : undefined;
  let checked = key === undefined ? undefined : CHECKED.get(key);
  if (checked === undefined) {
    checked = checkPayload(type, kind, bytes, options, limits, parts);
    // A payload with fields of a newer version is remembered by its objects, message and
    // all, to be written again: it is not shared.
    if (key !== undefined && checked.unknownFields === 0) {
      if (CHECKED.size >= CACHED_PAYLOADS || cachedBytes + bytes.length > CACHE_BUDGET) {
        CHECKED.clear();
        cachedBytes = 0;
      }
      CHECKED.set(key, checked);
      cachedBytes += bytes.length;
    }
  }
  const { refs, unknownFields } = checked;
  const objects = liftTable(refs.checked, unknownFields > 0);
  return { message: checked.message as M, objects, facts: checked.facts as F, unknownFields };
}

/** Runs a step of decoding, keeping the promise that it throws only DecodeError. */
function onlyDecodeErrors<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    // Even where a check was missed.
    if (error instanceof DecodeError) throw error;
    const wrapped = new DecodeError("payload", "malformed", `cannot be decoded (${String(error)})`);
    throw Object.assign(wrapped, { cause: error });
  }
}
