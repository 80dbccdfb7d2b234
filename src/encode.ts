import { PayloadKindSchema } from "../gen/es/colocated/v1/payload_pb";
import {
  type Header,
  PayloadKind,
  type ProgramPayload,
  type SpecsPayload,
  type ValuePayload,
} from "../gen/ts/colocated/v1/payload";
import { EncodeError } from "./errors";
import { DeviceList } from "./model/device-list";
import { PickledFunction, type Program } from "./model/program";
import type { ShapeDtypeStruct } from "./model/shape-dtype-struct";
import type { PyTreeDef } from "./model/tree";
import { PickledValue, type ValueLeaf } from "./model/value-leaf";
import * as fn from "./payload/function";
import * as specs from "./payload/specs";
import * as value from "./payload/value";
import type { Writer } from "./payload/writer";
import * as writer from "./payload/writer";
import {
  type PayloadOrigin,
  pickleWriter,
  programOrigin,
  specsOrigin,
  valueOrigin,
} from "./provenance";
import { refuseNewer, valueSince } from "./schema-version";
import { TableBuilder } from "./table/lower-table";
import { graftUnknownFields } from "./unknown-fields";
import { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";
import { writeProgramPayload, writeSpecsPayload, writeValuePayload } from "./write-payload";

/** The minor version that introduced value payloads. */
const VALUE_SINCE = valueSince(PayloadKindSchema, PayloadKind.PAYLOAD_KIND_VALUE);

/** A payload message of any kind. */
type AnyPayload = SpecsPayload | ProgramPayload | ValuePayload;

/** Options every encode accepts. */
export interface EncodeOptions {
  /**
   * The minor version of colocated.v1 the reader reads (default SCHEMA_MINOR_VERSION, the
   * newest): the header says it, and a construct of a newer version is an EncodeError.
   */
  targetMinorVersion?: number;
  /**
   * Who wrote the payload, named in its header (colocated.v1.3; thisWriter() for this library).
   * Left out of a payload for an older target, which has no place for it. Default: none, or
   * a carried payload's own (one re-sent with fields of a newer version).
   */
  writer?: Writer;
}

/** Lowers a specs pytree into a SpecsPayload message, ready for bytes (its settled parts frozen). */
export function lowerSpecsPayload(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
  options: EncodeOptions = {},
): SpecsPayload {
  const origin = specsOrigin({ treedef, leaves });
  const minorVersion = headerMinorVersion(options, origin);
  const table = seededTable(origin, targetOf(options));
  const at = (path: string) => ({ table, path, targetMinorVersion: table.targetMinorVersion });
  const message =
    carriedPart(origin, table, (m) => m.specs) ?? specs.lower({ treedef, leaves }, at("specs"));
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_SPECS, minorVersion, writerOf(options, origin)),
    table: { entries: table.entries },
    specs: message,
  });
}

/**
 * Lowers a program into a ProgramPayload message, ready for bytes: one table for all its parts.
 * Its table entries and specs may be shared with later lowerings, frozen (src/settled.ts).
 */
export function lowerProgramPayload(program: Program, options: EncodeOptions = {}): ProgramPayload {
  const origin = programOrigin(program);
  const minorVersion = headerMinorVersion(options, origin);
  const table = seededTable(origin, targetOf(options));
  const at = (path: string) => ({ table, path, targetMinorVersion: table.targetMinorVersion });
  if (!(program.devices instanceof DeviceList))
    throw new EncodeError("devices", "must be a DeviceList");
  const devices = table.add(program.devices, "devices");
  const message = fn.lower(program.function, at("function"));
  const inputSpecs =
    carriedPart(origin, table, (m) => m.inputSpecs) ??
    specs.lower(program.inputs, at("input_specs"));
  const outputSpecs = program.outputs
    ? (carriedPart(origin, table, (m) => m.outputSpecs) ??
      specs.lower(program.outputs, at("output_specs")))
    : undefined;
  return carryEnvelope(origin, {
    header: header(
      PayloadKind.PAYLOAD_KIND_PROGRAM,
      minorVersion,
      writerOf(options, origin, [program.function]),
    ),
    table: { entries: table.entries },
    function: message,
    inputSpecs,
    outputSpecs,
    devices,
  });
}

/**
 * Lowers a value's pytree (colocated.v1.2: a Mesh, shardings, dtypes, a function, ...) into a
 * ValuePayload message, ready for bytes: its table objects are written once in its table.
 */
export function lowerValuePayload(
  treedef: PyTreeDef,
  leaves: readonly ValueLeaf[],
  options: EncodeOptions = {},
): ValuePayload {
  const target = targetOf(options);
  refuseNewer("header.kind", "a value payload", VALUE_SINCE, target);
  const origin = valueOrigin({ treedef, leaves });
  const minorVersion = headerMinorVersion(options, origin);
  const table = seededTable(origin, target);
  const at = { table, path: "value", targetMinorVersion: table.targetMinorVersion };
  const message =
    carriedPart(origin, table, (m) => m.value) ?? value.lower({ treedef, leaves: [...leaves] }, at);
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_VALUE, minorVersion, writerOf(options, origin, leaves)),
    table: { entries: table.entries },
    value: message,
  });
}

/** Encodes a specs pytree as canonical SpecsPayload bytes. */
export function encodeSpecs(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
  options: EncodeOptions = {},
): Uint8Array {
  return writeSpecsPayload(lowerSpecsPayload(treedef, leaves, options));
}

/** Encodes a program as canonical ProgramPayload bytes. */
export function encodeProgram(program: Program, options: EncodeOptions = {}): Uint8Array {
  return writeProgramPayload(lowerProgramPayload(program, options));
}

/** Encodes a value's pytree as canonical ValuePayload bytes (colocated.v1.2). */
export function encodeValue(
  treedef: PyTreeDef,
  leaves: readonly ValueLeaf[],
  options: EncodeOptions = {},
): Uint8Array {
  return writeValuePayload(lowerValuePayload(treedef, leaves, options));
}

/** The target minor version, checked: one this encoder can write. */
function targetOf(options: EncodeOptions): number {
  const target = options.targetMinorVersion ?? SCHEMA_MINOR_VERSION;
  if (!Number.isInteger(target) || target < 0 || target > SCHEMA_MINOR_VERSION) {
    const detail = `target minor version ${target}: this encoder writes 1.0 to 1.${SCHEMA_MINOR_VERSION}`;
    throw new EncodeError("header.minor_version", detail);
  }
  return target;
}

/**
 * The header's minor version: the target. A decoded payload of a newer minor version, carried
 * through with its unknown fields, keeps its version when no target is given; an older target
 * cannot be promised what it holds (a reader at that version refuses the newer header).
 */
function headerMinorVersion(
  options: EncodeOptions,
  origin: PayloadOrigin<AnyPayload> | undefined,
): number {
  const target = targetOf(options);
  const carried = origin?.message.header?.minorVersion ?? 0;
  if (carried <= target) return target;
  if (options.targetMinorVersion === undefined) return carried;
  const detail = `carries fields of colocated.v1.${carried}; the target is 1.${target}`;
  throw new EncodeError("header.minor_version", detail);
}

/**
 * A part (specs, a value) of a carried payload (one with fields of a newer minor version), as
 * written: how its writer wrote the tree (which subtrees it repeats, say) is that version's
 * choice, so re-sending it keeps it. The origin is there only while the part is exactly as decoded.
 */
function carriedPart<M extends AnyPayload, P>(
  origin: PayloadOrigin<M> | undefined,
  table: TableBuilder,
  pick: (message: M) => P | undefined,
): P | undefined {
  // Equal decoded entries fold into one, which moves later indices: then the tree is lowered again.
  const keptIndices = table.entries.length === origin?.table.length;
  return origin && keptIndices ? pick(origin.message) : undefined;
}

/** A table that starts with a decoded payload's entries, in order, so their indices hold. */
function seededTable(origin: PayloadOrigin<unknown> | undefined, target: number): TableBuilder {
  const table = new TableBuilder(target);
  for (const [i, object] of origin?.table.entries() ?? []) table.add(object, `table[${i}]`);
  return table;
}

/**
 * Carries the unknown fields of a decoded payload's envelope (entries carry their own) onto a
 * copy of its parts: lowered parts may be settled ones, shared with other payloads.
 */
function carryEnvelope<M extends AnyPayload>(origin: PayloadOrigin<M> | undefined, message: M): M {
  if (!origin) return message;
  const { table, ...parts } = message;
  const carried = { ...structuredClone(parts), table } as M;
  graftUnknownFields(origin.message, carried, new Set(origin.message.table?.entries));
  return carried;
}

/**
 * The writer to name: the one asked for, else a carried payload's own, else the writer of a
 * decoded pickle among `parts` (this process did not write it: passing it on names its writer).
 */
function writerOf(
  options: EncodeOptions,
  origin: PayloadOrigin<AnyPayload> | undefined,
  parts: readonly unknown[] = [],
): Writer | undefined {
  if (options.writer) return options.writer;
  const carried = origin?.message.header?.writer;
  if (carried) return writer.lift(carried);
  for (const part of parts) {
    if (!(part instanceof PickledFunction || part instanceof PickledValue)) continue;
    const named = pickleWriter(part);
    if (named) return named;
  }
  return undefined;
}

function header(kind: PayloadKind, minorVersion: number, by: Writer | undefined): Header {
  const written = by && minorVersion >= writer.WRITER_SINCE ? writer.lower(by) : undefined;
  return { majorVersion: SCHEMA_MAJOR_VERSION, minorVersion, kind, writer: written };
}
