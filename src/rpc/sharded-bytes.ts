import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { elementByteLength } from "./array-bytes";
import { type ShardScope, WHOLE_ARRAYS } from "./sharded-outputs";

/**
 * The input bytes an ExecuteSharded call holds on the worker at its peak, as the worker's
 * `--max-inflight-bytes` counts them: every shard the call streams (its scope's, each once),
 * counted from its first chunk to the call's end. For a whole call that is the inputs' own
 * byte length, as an array's distinct shards tile it; for a WorkerGroup member, its share.
 */
export function shardedBytes(
  specs: readonly ShapeDtypeStruct[],
  scope: ShardScope = WHOLE_ARRAYS,
): number {
  let total = 0;
  for (const spec of specs) {
    const item = elementByteLength(spec) ?? 0; // checkShardedCall refused the others
    for (const { start, stop } of scope.shardsOf(spec)) {
      total += stop.reduce((n, end, d) => n * (end - start[d]), item);
    }
  }
  return total;
}
