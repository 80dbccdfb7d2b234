import {
  type Header,
  PayloadKind,
  ProgramPayload,
  SpecsPayload,
} from "../gen/ts/colocated/v1/payload";
import { lowerProgram } from "./lower/program";
import { lowerSpecs } from "./lower/specs";
import { TableBuilder } from "./lower/table-builder";
import type { Program } from "./model/program";
import type { ShapeDtypeStruct } from "./model/shape-dtype-struct";
import type { PyTreeDef } from "./model/tree";
import { type PayloadOrigin, programOrigin, specsOrigin } from "./provenance";
import { graftUnknownFields } from "./unknown-fields";
import { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";

/** Lowers a specs pytree into a SpecsPayload message, ready for bytes. */
export function lowerSpecsPayload(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
): SpecsPayload {
  const origin = specsOrigin({ treedef, leaves });
  const table = seededTable(origin);
  const specs = lowerSpecs(table, { treedef, leaves: [...leaves] }, "specs");
  const message = {
    header: header(PayloadKind.PAYLOAD_KIND_SPECS, origin),
    table: { entries: table.entries },
    specs,
  };
  return carryEnvelope(origin, message);
}

/** Lowers a program into a ProgramPayload message, ready for bytes. */
export function lowerProgramPayload(program: Program): ProgramPayload {
  const origin = programOrigin(program);
  const body = lowerProgram(seededTable(origin), program);
  return carryEnvelope(origin, {
    header: header(PayloadKind.PAYLOAD_KIND_PROGRAM, origin),
    ...body,
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
