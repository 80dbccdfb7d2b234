import {
  FunctionMessage as FunctionMsg,
  type ProgramPayload,
} from "../../gen/ts/colocated/v1/payload";
import { EncodeError } from "../errors";
import { DeviceList } from "../model/device-list";
import { FunctionRef, PickledFunction, type Program, UnknownFunction } from "../model/program";
import { lowerSpecs } from "./specs";
import type { TableBuilder } from "./table-builder";

/** Lowers a program into one shared table: devices, pickled refs, input leaves, output leaves. */
export function lowerProgram(
  table: TableBuilder,
  program: Program,
): Omit<ProgramPayload, "header"> {
  if (!(program.devices instanceof DeviceList))
    throw new EncodeError("devices", "must be a DeviceList");
  const devices = table.add(program.devices, "devices");
  const fn = lowerFunction(table, program.function);
  const inputSpecs = lowerSpecs(table, program.inputs, "input_specs");
  const outputSpecs = program.outputs
    ? lowerSpecs(table, program.outputs, "output_specs")
    : undefined;
  return { table: { entries: table.entries }, function: fn, inputSpecs, outputSpecs, devices };
}

function lowerFunction(table: TableBuilder, fn: Program["function"]): FunctionMsg {
  if (fn instanceof FunctionRef) {
    if (!fn.module || !fn.qualname)
      throw new EncodeError("function.by_name", "module and qualname are required");
    return { function: { $case: "byName", value: { module: fn.module, qualname: fn.qualname } } };
  }
  if (fn instanceof PickledFunction) {
    const refs = fn.refs.map((ref, i) => table.add(ref, `function.pickled.refs[${i}]`));
    return { function: { $case: "pickled", value: { pickle: fn.pickle, refs } } };
  }
  if (fn instanceof UnknownFunction) return FunctionMsg.decode(fn.bytes);
  throw new EncodeError(
    "function",
    "must be a FunctionRef, a PickledFunction or an UnknownFunction",
  );
}
