import { PayloadKind, ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { DecodeError } from "./errors";
import { liftProgram } from "./lift/program";
import { liftSpecs } from "./lift/specs";
import { liftTable } from "./lift/table";
import { resolveLimits } from "./limits";
import type { Program, Specs } from "./model/program";
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
    return liftSpecs(message.specs, refs, "specs", limits);
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
    return liftProgram(message, refs, limits);
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
