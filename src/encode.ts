import {
  type Header,
  PayloadKind,
  ProgramPayload,
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

/** Lowers a specs pytree into a SpecsPayload message, ready for bytes. */
export function lowerSpecsPayload(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
): SpecsPayload {
  const origin = specsOrigin({ treedef, leaves });
  const table = seededTable(origin);
  const message = specs.lower({ treedef, leaves: [...leaves] }, { table, path: "specs" });
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_SPECS, origin),
    table: { entries: table.entries },
    specs: message,
  });
}

/** Lowers a program into a ProgramPayload message, ready for bytes: one table for all its parts. */
export function lowerProgramPayload(program: Program): ProgramPayload {
  const origin = programOrigin(program);
  const table = seededTable(origin);
  if (!(program.devices instanceof DeviceList))
    throw new EncodeError("devices", "must be a DeviceList");
  const devices = table.add(program.devices, "devices");
  const message = fn.lower(program.function, { table, path: "function" });
  const inputSpecs = specs.lower(program.inputs, { table, path: "input_specs" });
  const outputSpecs = program.outputs
    ? specs.lower(program.outputs, { table, path: "output_specs" })
    : undefined;
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_PROGRAM, origin),
    table: { entries: table.entries },
    function: message,
    inputSpecs,
    outputSpecs,
    devices,
  });
}

/** Encodes a specs pytree as canonical SpecsPayload bytes. */
export function encodeSpecs(treedef: PyTreeDef, leaves: readonly ShapeDtypeStruct[]): Uint8Array {
  return SpecsPayload.encode(lowerSpecsPayload(treedef, leaves)).finish();
}

/** Encodes a program as canonical ProgramPayload bytes. */
export function encodeProgram(program: Program): Uint8Array {
  return ProgramPayload.encode(lowerProgramPayload(program)).finish();
}

/** A table that starts with a decoded payload's entries, in order, so their indices hold. */
function seededTable(origin: PayloadOrigin<unknown> | undefined): TableBuilder {
  const table = new TableBuilder();
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

function header(kind: PayloadKind, origin?: PayloadOrigin<SpecsPayload | ProgramPayload>): Header {
  // A payload of a newer minor version, carried through, keeps its version with its fields.
  const minorVersion = Math.max(SCHEMA_MINOR_VERSION, origin?.message.header?.minorVersion ?? 0);
  return { majorVersion: SCHEMA_MAJOR_VERSION, minorVersion, kind };
}
