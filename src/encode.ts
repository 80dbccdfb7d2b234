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
import { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "./version";

/** Lowers a specs pytree into a SpecsPayload message, ready for bytes. */
export function lowerSpecsPayload(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
): SpecsPayload {
  const table = new TableBuilder();
  const specs = lowerSpecs(table, { treedef, leaves: [...leaves] }, "specs");
  return {
    header: header(PayloadKind.PAYLOAD_KIND_SPECS),
    table: { entries: table.entries },
    specs,
  };
}

/** Lowers a program into a ProgramPayload message, ready for bytes. */
export function lowerProgramPayload(program: Program): ProgramPayload {
  const body = lowerProgram(new TableBuilder(), program);
  return { header: header(PayloadKind.PAYLOAD_KIND_PROGRAM), ...body };
}

/** Encodes a specs pytree as canonical SpecsPayload bytes. */
export function encodeSpecs(treedef: PyTreeDef, leaves: readonly ShapeDtypeStruct[]): Uint8Array {
  return SpecsPayload.encode(lowerSpecsPayload(treedef, leaves)).finish();
}

/** Encodes a program as canonical ProgramPayload bytes. */
export function encodeProgram(program: Program): Uint8Array {
  return ProgramPayload.encode(lowerProgramPayload(program)).finish();
}

function header(kind: PayloadKind): Header {
  return { majorVersion: SCHEMA_MAJOR_VERSION, minorVersion: SCHEMA_MINOR_VERSION, kind };
}
