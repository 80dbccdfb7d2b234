import { PayloadKind, ProgramPayload, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import type { SharedObjectTable } from "../gen/ts/colocated/v1/table";
import { DecodeError } from "./errors";
import { liftProgram } from "./lift/program";
import { liftSpecs } from "./lift/specs";
import { liftTable } from "./lift/table";
import { type DecodeLimits, resolveLimits } from "./limits";
import type { Program, Specs } from "./model/program";
import { type PayloadOrigin, rememberProgram, rememberSpecs } from "./provenance";
import { type DecodeOptions, parsePayload } from "./validate/payload";
import type { References } from "./validate/reference";

/** Decodes SpecsPayload bytes into a treedef and its ShapeDtypeStruct leaves; throws only DecodeError. */
export function decodeSpecs(bytes: Uint8Array, options: DecodeOptions = {}): Specs {
  return decodePayload(SpecsPayload, PayloadKind.PAYLOAD_KIND_SPECS, bytes, options, {
    lift: (message, refs, limits) => liftSpecs(message.specs, refs, "specs", limits),
    remember: rememberSpecs,
  });
}

/** Decodes ProgramPayload bytes into a Program; throws only DecodeError. */
export function decodeProgram(bytes: Uint8Array, options: DecodeOptions = {}): Program {
  return decodePayload(ProgramPayload, PayloadKind.PAYLOAD_KIND_PROGRAM, bytes, options, {
    lift: liftProgram,
    remember: rememberProgram,
  });
}

/** How one payload kind is lifted, and how its fields of a newer version are remembered. */
interface PayloadLifter<M, R> {
  lift: (message: M, refs: References, limits: DecodeLimits) => R;
  remember: (result: R, origin: PayloadOrigin<M>) => void;
}

/** bytes → wire scan and header → message → lifted table → model, keeping any newer fields. */
function decodePayload<M extends { table?: SharedObjectTable }, R>(
  type: { decode(input: Uint8Array): M },
  kind: PayloadKind,
  bytes: Uint8Array,
  options: DecodeOptions,
  lifter: PayloadLifter<M, R>,
): R {
  try {
    const limits = resolveLimits(options.limits);
    const { message, unknownFields } = parsePayload(type, kind, bytes, { ...options, limits });
    const refs = liftTable(message.table, limits, unknownFields > 0);
    const result = lifter.lift(message, refs, limits);
    if (unknownFields > 0) lifter.remember(result, { message, table: refs.lifted });
    return result;
  } catch (error) {
    // Keeps the promise that decoding throws only DecodeError, even where a check was missed.
    if (error instanceof DecodeError) throw error;
    const wrapped = new DecodeError("payload", "malformed", `cannot be decoded (${String(error)})`);
    throw Object.assign(wrapped, { cause: error });
  }
}
