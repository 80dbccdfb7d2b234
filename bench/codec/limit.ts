import { measure, type Policy, type Timing } from "../common/measure";

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
