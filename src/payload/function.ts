import {
  FunctionMessage,
  type FunctionRef as FunctionRefMessage,
} from "../../gen/ts/colocated/v1/payload";
import { DecodeError, EncodeError } from "../errors";
import { FunctionRef, PickledFunction, type Program, UnknownFunction } from "../model/program";
import type { CheckContext } from "../table/check-table";
import type { LiftContext } from "../table/lift-table";
import type { LowerContext } from "../table/lower-table";
import type { Accepts, Checked } from "../table/references";
import { hasUnknownFields } from "../unknown-fields";

/** A pickle's reference: any entry, of any kind. */
export const ANY: Accepts<unknown, unknown> = {
  name: "shared object",
  accepts: (_c): _c is Checked => true,
};

/** Lowers a program's function; a pickled function's objects go into the shared table. */
export function lower(fn: Program["function"], ctx: LowerContext): FunctionMessage {
  if (fn instanceof FunctionRef)
    return { function: { $case: "byName", value: lowerByName(fn, `${ctx.path}.by_name`) } };
  if (fn instanceof PickledFunction) {
    const refs = fn.refs.map((ref, i) => ctx.table.add(ref, `${ctx.path}.pickled.refs[${i}]`));
    return { function: { $case: "pickled", value: { pickle: fn.pickle, refs } } };
  }
  if (fn instanceof UnknownFunction) return FunctionMessage.decode(fn.bytes);
  throw new EncodeError(ctx.path, "must be a FunctionRef, a PickledFunction or an UnknownFunction");
}

/** A function by name (a program's, or a value's leaf) as its message at `path`. */
export function lowerByName(fn: FunctionRef, path: string): FunctionRefMessage {
  if (!fn.module || !fn.qualname) throw new EncodeError(path, "module and qualname are required");
  return { module: fn.module, qualname: fn.qualname };
}

/** Checks a function by name at `path`: it names its module and qualname. */
export function checkByName(message: FunctionRefMessage, path: string): void {
  if (!message.module)
    throw new DecodeError(`${path}.module`, "missing", "a module name is required");
  if (!message.qualname)
    throw new DecodeError(`${path}.qualname`, "missing", "a qualified name is required");
}

/** Checks a function: a named one names its module and qualname, a pickled one refers backwards. */
export function check(message: FunctionMessage | undefined, ctx: CheckContext): void {
  const { path, refs } = ctx;
  const fn = message?.function;
  switch (fn?.$case) {
    case "byName":
      checkByName(fn.value, `${path}.by_name`);
      return;
    case "pickled":
      fn.value.refs.forEach((ref, i) => {
        refs.require(ref, refs.tableSize, `${path}.pickled.refs[${i}]`, ANY);
      });
      return;
    default:
      // A kind from a newer minor version arrives as unknown fields: kept byte for byte.
      if (message && hasUnknownFields(message)) return;
      throw new DecodeError(path, "missing", "no known function form (by_name or pickled)");
  }
}

/** Lifts a checked function; a pickled one's objects are the table's, shared. */
export function lift(message: FunctionMessage, ctx: LiftContext<unknown>): Program["function"] {
  const fn = message.function;
  switch (fn?.$case) {
    case "byName":
      return new FunctionRef(fn.value.module, fn.value.qualname);
    case "pickled":
      return new PickledFunction(
        fn.value.pickle,
        fn.value.refs.map((ref) => ctx.objects[ref]),
      );
    default:
      return new UnknownFunction(FunctionMessage.encode(message).finish());
  }
}
