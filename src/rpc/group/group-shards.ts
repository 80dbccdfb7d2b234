import type { ShapeDtypeStruct } from "../../model/shape-dtype-struct";
import { distinctShards, type ShardIndex } from "../../shard-indices";

/** Of each member, of each leaf, the distinct shards the member's devices hold. */
export type MemberShards = ShardIndex[][][];

/**
 * Every member's part of some arrays (a program's inputs, or its outputs), found in one pass
 * per array however many members there are: of each array, the distinct shards that at least
 * one of a member's devices holds, each once (the member places it on all of them, and returns
 * it once), in JAX's order. A leaf with no sharding lives whole on the program's first device,
 * as the worker places it, so only that device's member gets it. `memberOf` maps each device
 * id of the job to its member's position. Throws ShardIndexError as distinctShards does.
 */
export function planShards(
  specs: readonly ShapeDtypeStruct[],
  memberOf: ReadonlyMap<number, number>,
  members: number,
  firstDevice: number,
): MemberShards {
  const plan: MemberShards = Array.from({ length: members }, () => specs.map(() => []));
  // The last shard each member was given, so a shard held by several of its devices goes once.
  const given = new Int32Array(members).fill(-1);
  specs.forEach((spec, leaf) => {
    if (spec.sharding === null) {
      const member = memberOf.get(firstDevice);
      if (member !== undefined) {
        plan[member][leaf].push({ start: spec.shape.map(() => 0), stop: [...spec.shape] });
      }
      return;
    }
    given.fill(-1);
    distinctShards(spec.sharding, spec.shape).forEach((shard, k) => {
      for (const device of shard.devices) {
        const member = memberOf.get(device);
        if (member === undefined || given[member] === k) continue;
        given[member] = k;
        plan[member][leaf].push(shard.index);
      }
    });
  });
  return plan;
}
