/**
 * What differs outside the trees: the header's schema version and writer, a program's
 * function and devices, and a part one side lacks. Python: diff/payload_causes.py.
 */
import { FunctionRef, PickledFunction, type Program } from "../model/program";
import { describeWriter } from "../payload/writer";
import { type EntryComparison, sameNumbers } from "./compare-entries";
import { change, countText, thousands } from "./describe";
import { type Cause, valueCause } from "./groups";
import type { Json } from "./payload-diff";
import type { DiffSide } from "./read-side";

/** The schema's minor version, when the headers differ in it. */
export function headerCause(a: DiffSide, b: DiffSide): Cause | undefined {
  const [ma, mb] = [a.minorVersion, b.minorVersion];
  if (ma === mb) return undefined;
  const text = `schema version ${change(`colocated.v1.${ma}`, `colocated.v1.${mb}`)}`;
  return valueCause("header", ma, mb, text);
}

/** Who wrote the payloads (1.3), when their headers name different writers or only one does. */
export function writerCause(a: DiffSide, b: DiffSide): Cause | undefined {
  const [wa, wb] = [
    a.writer ? describeWriter(a.writer) : null,
    b.writer ? describeWriter(b.writer) : null,
  ];
  if (wa === wb) return undefined;
  return valueCause("writer", wa, wb, `writer ${change(wa ?? "unnamed", wb ?? "unnamed")}`);
}

/** A program's function: its name, or its pickle and the entries the pickle refers to. */
export function functionCause(
  a: DiffSide,
  b: DiffSide,
  entries: EntryComparison,
): Cause | undefined {
  const fa = a.fn?.value as Program["function"];
  const fb = b.fn?.value as Program["function"];
  const [ja, jb] = [functionJson(fa), functionJson(fb)];
  if (fa instanceof PickledFunction && fb instanceof PickledFunction) {
    const details = entries.pickleDetails(fa.pickle, fb.pickle, a.fn?.refs ?? [], b.fn?.refs ?? []);
    if (details.length === 0) return undefined;
    const text = ["pickled function", ...details.map((d) => d.text)].join(", ");
    return { key: "function", cause: "function", text, entries: null, a: ja, b: jb, details };
  }
  if (JSON.stringify(ja) === JSON.stringify(jb)) {
    if (!(fa instanceof FunctionRef) && !sameNumbers(unknownBytes(fa), unknownBytes(fb))) {
      return valueCause("function", ja, jb, "function of a newer minor version: it differs");
    }
    return undefined;
  }
  return valueCause("function", ja, jb, `function ${change(words(fa), words(fb))}`);
}

/** A program's device list, compared by value. */
export function devicesCauses(a: DiffSide, b: DiffSide, entries: EntryComparison): Cause[] {
  return entries.entries(a.devices as number, b.devices as number);
}

/** A part one side has and the other lacks (a program's output specs), with its leaves. */
export function partCause(name: string, inA: boolean, leaves: number): Cause {
  const [pa, pb] = inA ? ["present", "absent"] : ["absent", "present"];
  const text = `${name} specs ${change(pa, pb)} (${countText(leaves, "leaf", "leaves")})`;
  return valueCause("part", inA, !inA, text);
}

/** A function in the result: {"name": "m.f"}, {"pickled": bytes}, {"unknown": bytes}. */
function functionJson(fn: Program["function"]): Json {
  if (fn instanceof FunctionRef) return { name: `${fn.module}.${fn.qualname}` };
  if (fn instanceof PickledFunction) return { pickled: fn.pickle.length };
  return { unknown: fn.bytes.length };
}

function words(fn: Program["function"]): string {
  if (fn instanceof FunctionRef) return `${fn.module}.${fn.qualname}`;
  if (fn instanceof PickledFunction)
    return `a pickled function (${thousands(fn.pickle.length)} bytes)`;
  return "a function of a newer minor version";
}

function unknownBytes(fn: Program["function"]): Uint8Array {
  return "bytes" in fn ? fn.bytes : new Uint8Array();
}
