import { SpecsPayload } from "../../gen/ts/colocated/v1/payload";
import { encodeSpecs, type PyTreeDef, type ShapeDtypeStruct } from "../../src/index";
import { measure, type Policy, type Timing } from "../common/measure";
import type { SchemaLimit } from "./results";

/**
 * What a device list cannot beat: writing n ids into an Int32Array and checking each once.
 * S3 reports its time per device beside encode and decode.
 */
export function measureLimit(n: number, policy: Policy): Timing {
  return measure(() => fillAndCheck(n), policy).timing;
}

function fillAndCheck(n: number): Int32Array {
  const ids = new Int32Array(n);
  for (let i = 0; i < n; i++) ids[i] = i;
  for (let i = 0; i < n; i++) if (ids[i] !== i) throw new Error(`id ${i} was not written`);
  return ids;
}

/**
 * What no TypeScript reader or writer of the schema can beat on a tree: ts-proto's generated
 * `SpecsPayload.decode` of its payload as 1.2 writes it (keys in full, so a shorter encoding
 * does not lower its own limit), and the generated encode of that message.
 */
export function measureGeneratedLimit(
  treedef: PyTreeDef,
  leaves: readonly ShapeDtypeStruct[],
  policy: Policy,
): SchemaLimit {
  const bytes = encodeSpecs(treedef, leaves, { targetMinorVersion: 2 });
  const message = SpecsPayload.decode(bytes);
  return {
    decode: measure(() => SpecsPayload.decode(bytes), policy).timing,
    encode: measure(() => SpecsPayload.encode(message).finish(), policy).timing,
  };
}
