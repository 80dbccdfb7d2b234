import { status } from "@grpc/grpc-js";
import type { WorkerRuntime } from "../../../gen/ts/colocated/v1/service";
import { WorkerError } from "../errors";

/** A member as its GetVersion answer described what it runs (undefined: a worker too old to say). */
export interface MemberRuntime {
  target: string;
  runtime: WorkerRuntime | undefined;
}

type Part = [name: string, of: (r: WorkerRuntime) => string];

/** What every member of a job must share: one jaxlib (one XLA), and pickles of one Python minor. */
const MUST_MATCH: Part[] = [
  ["jaxlib", (r) => r.jaxlib],
  ["Python minor", (r) => r.python.split(".").slice(0, 2).join(".")],
];

/** What may differ, and is reported. */
const REPORTED: Part[] = [
  ["colocated-wire", (r) => r.colocatedWire],
  ["Python", (r) => r.python],
  ["jax", (r) => r.jax],
  ["numpy", (r) => r.numpy],
  ["cloudpickle", (r) => r.cloudpickle],
  ["platform", (r) => r.platform],
  ["device kind", (r) => r.deviceKind],
];

/** The members of a group differ in jaxlib or in Python's minor version. */
export class GroupRuntimeError extends WorkerError {
  override readonly name: string = "GroupRuntimeError";

  constructor(
    /** One line a difference, naming the members on each side. */
    readonly differences: string[],
  ) {
    const details = `${differences.join("; ")} (a group's members must run one jaxlib and one Python minor)`;
    super(status.FAILED_PRECONDITION, details, `the members differ in ${details}`);
  }
}

/**
 * The ways the members' runtimes differ that a group may live with, one line each; throws
 * GroupRuntimeError, naming the members on each side, when they differ in jaxlib or Python minor.
 */
export function checkRuntimes(members: readonly MemberRuntime[]): string[] {
  const known = members.filter((m) => m.runtime !== undefined);
  const fatal = MUST_MATCH.flatMap((part) => differs(known, part));
  if (fatal.length) throw new GroupRuntimeError(fatal);
  const unknown = members.filter((m) => m.runtime === undefined).map((m) => m.target);
  const reported = REPORTED.flatMap((part) => differs(known, part));
  if (unknown.length && known.length) {
    reported.push(`runtime: not said by ${unknown.join(", ")} (workers older than WorkerRuntime)`);
  }
  return reported;
}

/** "jaxlib: 0.10.2 at a, b; 0.9.2 at c", or nothing when every member has the same. */
function differs(members: readonly MemberRuntime[], [name, of]: Part): string[] {
  const by = new Map<string, string[]>();
  for (const m of members) {
    const value = of(m.runtime as WorkerRuntime) || "(not said)";
    by.set(value, [...(by.get(value) ?? []), m.target]);
  }
  if (by.size < 2) return [];
  const sides = [...by].map(([value, targets]) => `${value} at ${targets.join(", ")}`);
  return [`${name}: ${sides.join("; ")}`];
}
