import {
  type Header,
  PayloadKind,
  ProgramPayload,
  type Specs as SpecsMessage,
  SpecsPayload,
} from "../gen/ts/colocated/v1/payload";
import { EncodeError } from "./errors";
import { DeviceList } from "./model/device-list";
import type { Program } from "./model/program";
import type { ShapeDtypeStruct } from "./model/shape-dtype-struct";
import type { PyTreeDef } from "./model/tree";
import * as fn from "./payload/function";
import * as specs from "./payload/specs";
import { type PayloadOrigin, programOrigin, specsOrigin } from "./provenance";
import { TableBuilder } from "./table/lower-table";
import { graftUnknownFields } from "./unknown-fields";
import { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";

/** Options every encode accepts. */
export interface EncodeOptions {
  /**
   * The minor version of colocated.v1 the reader reads (default SCHEMA_MINOR_VERSION, the
   * newest): the header says it, and a construct of a newer version is an EncodeError.
   */
  targetMinorVersion?: number;
}

/** Lowers a specs pytree into a SpecsPayload message, ready for bytes. */
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
    carriedSpecs(origin, table, (m) => m.specs) ??
    specs.lower({ treedef, leaves: [...leaves] }, at("specs"));
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_SPECS, minorVersion),
    table: { entries: table.entries },
    specs: message,
  });
}

/** Lowers a program into a ProgramPayload message, ready for bytes: one table for all its parts. */
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
    carriedSpecs(origin, table, (m) => m.inputSpecs) ??
    specs.lower(program.inputs, at("input_specs"));
  const outputSpecs = program.outputs
    ? (carriedSpecs(origin, table, (m) => m.outputSpecs) ??
      specs.lower(program.outputs, at("output_specs")))
    : undefined;
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_PROGRAM, minorVersion),
    table: { entries: table.entries },
    function: message,
    inputSpecs,
    outputSpecs,
    devices,
  });
}

/** Encodes a specs pytree as canonical SpecsPayload bytes. */
export function encodeSpecs(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
  options: EncodeOptions = {},
): Uint8Array {
  return SpecsPayload.encode(lowerSpecsPayload(treedef, leaves, options)).finish();
}

/** Encodes a program as canonical ProgramPayload bytes. */
export function encodeProgram(program: Program, options: EncodeOptions = {}): Uint8Array {
  return ProgramPayload.encode(lowerProgramPayload(program, options)).finish();
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
  origin: PayloadOrigin<SpecsPayload | ProgramPayload> | undefined,
): number {
  const target = targetOf(options);
  const carried = origin?.message.header?.minorVersion ?? 0;
  if (carried <= target) return target;
  if (options.targetMinorVersion === undefined) return carried;
  const detail = `carries fields of colocated.v1.${carried}; the target is 1.${target}`;
  throw new EncodeError("header.minor_version", detail);
}

/**
 * The specs of a carried payload (one with fields of a newer minor version), as written: how
 * its writer wrote the tree (which subtrees it repeats, say) is that version's choice, so
 * re-sending it keeps it. The origin is there only while the specs are exactly as decoded.
 */
function carriedSpecs<M extends SpecsPayload | ProgramPayload>(
  origin: PayloadOrigin<M> | undefined,
  table: TableBuilder,
  pick: (message: M) => SpecsMessage | undefined,
): SpecsMessage | undefined {
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

/** Carries the unknown fields of a decoded payload's envelope (entries carry their own). */
function carryEnvelope<M extends SpecsPayload | ProgramPayload>(
  origin: PayloadOrigin<M> | undefined,
  message: M,
): M {
  if (origin) graftUnknownFields(origin.message, message, new Set(origin.message.table?.entries));
  return message;
}

function header(kind: PayloadKind, minorVersion: number): Header {
  return { majorVersion: SCHEMA_MAJOR_VERSION, minorVersion, kind };
}
