import { PayloadKind, ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { DecodeError } from "./errors";
import { liftProgram } from "./lift/program";
import { liftSpecs } from "./lift/specs";
import { liftTable } from "./lift/table";
import { resolveLimits } from "./limits";
import type { Program, Specs } from "./model/program";
import { rememberProgram, rememberSpecs } from "./provenance";
import { hasUnknownFields } from "./unknown-fields";
import { type DecodeOptions, parsePayload } from "./validate/payload";

/** Decodes SpecsPayload bytes into a treedef and its ShapeDtypeStruct leaves; throws only DecodeError. */
export function decodeSpecs(bytes: Uint8Array, options: DecodeOptions = {}): Specs {
  return onlyDecodeErrors(() => {
    const limits = resolveLimits(options.limits);
    const message = parsePayload(SpecsPayload, PayloadKind.PAYLOAD_KIND_SPECS, bytes, {
      ...options,
      limits,
    });
    const refs = liftTable(message.table, limits);
    const specs = liftSpecs(message.specs, refs, "specs", limits);
    if (hasUnknownFields(message)) rememberSpecs(specs, { message, table: refs.lifted });
    return specs;
  });
}

/** Decodes ProgramPayload bytes into a Program; throws only DecodeError. */
export function decodeProgram(bytes: Uint8Array, options: DecodeOptions = {}): Program {
  return onlyDecodeErrors(() => {
    const limits = resolveLimits(options.limits);
    const message = parsePayload(ProgramPayload, PayloadKind.PAYLOAD_KIND_PROGRAM, bytes, {
      ...options,
      limits,
    });
    const refs = liftTable(message.table, limits);
    const program = liftProgram(message, refs, limits);
    if (hasUnknownFields(message)) rememberProgram(program, { message, table: refs.lifted });
    return program;
  });
}

/** Keeps the promise that decoding throws only DecodeError, even where a check was missed. */
function onlyDecodeErrors<T>(decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof DecodeError) throw error;
    const wrapped = new DecodeError("payload", "malformed", `cannot be decoded (${String(error)})`);
    throw Object.assign(wrapped, { cause: error });
  }
}
