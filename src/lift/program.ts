import { FunctionMessage, type ProgramPayload } from "../../gen/ts/colocated/v1/payload";
import { DecodeError } from "../errors";
import type { DecodeLimits } from "../limits";
import { FunctionRef, PickledFunction, type Program, UnknownFunction } from "../model/program";
import { hasUnknownFields } from "../unknown-fields";
import { ACCEPTS } from "../validate/kinds";
import type { References } from "../validate/reference";
import { liftSpecs } from "./specs";

/** Lifts a program from a checked payload whose table is already lifted. */
export function liftProgram(
  message: ProgramPayload,
  refs: References,
  limits: DecodeLimits,
): Program {
  const from = refs.tableSize;
  const devices = refs.require(message.devices, from, "devices", ACCEPTS.deviceList);
  const fn = liftFunction(message.function, refs);
  const inputs = liftSpecs(message.inputSpecs, refs, "input_specs", limits);
  const outputs = message.outputSpecs
    ? liftSpecs(message.outputSpecs, refs, "output_specs", limits)
    : undefined;
  return { function: fn, inputs, outputs, devices };
}

function liftFunction(message: FunctionMessage | undefined, refs: References): Program["function"] {
  const fn = message?.function;
  switch (fn?.$case) {
    case "byName": {
      const { module, qualname } = fn.value;
      if (!module)
        throw new DecodeError("function.by_name.module", "missing", "a module name is required");
      if (!qualname)
        throw new DecodeError(
          "function.by_name.qualname",
          "missing",
          "a qualified name is required",
        );
      return new FunctionRef(module, qualname);
    }
    case "pickled": {
      const objects = fn.value.refs.map((ref, i) =>
        refs.require(ref, refs.tableSize, `function.pickled.refs[${i}]`, ACCEPTS.any),
      );
      return new PickledFunction(fn.value.pickle, objects);
    }
    default:
      // A kind from a newer minor version arrives as unknown fields: kept byte for byte.
      if (message && hasUnknownFields(message))
        return new UnknownFunction(FunctionMessage.encode(message).finish());
      throw new DecodeError("function", "missing", "no known function form (by_name or pickled)");
  }
}
