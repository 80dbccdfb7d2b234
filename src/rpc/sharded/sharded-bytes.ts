import type { ShapeDtypeStruct } from "../../model/shape-dtype-struct";
import type { ShardIndex } from "../../shard-indices";
import { elementByteLength } from "./array-bytes";
import { shardsOf } from "./sharded-outputs";

/**
 * The input bytes an ExecuteSharded call holds on the worker at its peak, as the worker's
 * `--max-inflight-bytes` counts them: every shard the call streams (`inputShards`' of each
 * leaf, each once), counted from its first chunk to the call's end. For a whole call that is
 * the inputs' own byte length, as an array's distinct shards tile it; for a WorkerGroup
 * member, its share.
 */
export function shardedBytes(
  specs: readonly ShapeDtypeStruct[],
  inputShards: (spec: ShapeDtypeStruct, leaf: number) => readonly ShardIndex[] = shardsOf,
): number {
  let total = 0;
  specs.forEach((spec, leaf) => {
    const item = elementByteLength(spec) ?? 0; // checkShardedCall refused the others
    for (const { start, stop } of inputShards(spec, leaf)) {
      total += stop.reduce((n, end, d) => n * (end - start[d]), item);
    }
  });
  return total;
}
