import { DecodeError } from "../errors";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { distinctShards, type ShardIndex } from "../shard-indices";
import type { ShardScope } from "./sharded-outputs";

/**
 * The output buffers of one group call, shared by its members' streams: the first member to
 * send its output specs makes each buffer, and every member's shards land in them. A shard
 * that several members hold arrives from each (the same bytes, by SPMD) in the same place.
 */
export class GroupBuffers {
  private readonly buffers: Uint8Array[] = [];

  /** Output `leaf`'s buffer; a member whose output is another size disagrees with the others. */
  buffer(leaf: number, bytes: number, make: () => Uint8Array, member: string): Uint8Array {
    const known = this.buffers[leaf];
    if (known === undefined) {
      this.buffers[leaf] = make();
      return this.buffers[leaf];
    }
    if (known.length !== bytes) {
      const detail = `${member} sends ${bytes} bytes, another member ${known.length}: the members' output specs differ`;
      throw new DecodeError(`outputs[${leaf}]`, "invalid-value", detail);
    }
    return known;
  }
}

/**
 * One member's part of a group call: of each array, the distinct shards that at least one of
 * the member's devices holds, each once (the member places it on all of them, and returns it
 * once). A leaf with no sharding lives whole on the program's first device, as the worker
 * places it, so only that device's member gets it. Outputs land in `buffers`.
 */
export function memberScope(
  devices: ReadonlySet<number>,
  firstDevice: number,
  buffers: GroupBuffers,
  member: string,
): ShardScope {
  return {
    shardsOf: (spec) => memberShards(spec, devices, firstDevice),
    buffer: (leaf, bytes, make) => buffers.buffer(leaf, bytes, make, member),
  };
}

/** The distinct shards of `spec` that any of `devices` holds, in JAX's order. */
export function memberShards(
  spec: ShapeDtypeStruct,
  devices: ReadonlySet<number>,
  firstDevice: number,
): ShardIndex[] {
  if (spec.sharding === null) {
    if (!devices.has(firstDevice)) return [];
    return [{ start: spec.shape.map(() => 0), stop: [...spec.shape] }];
  }
  return distinctShards(spec.sharding, spec.shape)
    .filter((shard) => shard.devices.some((d) => devices.has(d)))
    .map((shard) => shard.index);
}
