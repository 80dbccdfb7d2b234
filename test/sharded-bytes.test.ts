import { DeviceList, Mesh, NamedSharding, PartitionSpec, ShapeDtypeStruct } from "../src";
import { planShards } from "../src/rpc/group/group-shards";
import { shardedBytes } from "../src/rpc/sharded/sharded-bytes";
import { range } from "./fixtures";

// The bytes an ExecuteSharded call is counted for in the client's queue: what the worker holds.

const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
const on = (...spec: (string | null)[]) => new NamedSharding(mesh, new PartitionSpec(...spec));
const f32 = (shape: number[], ...spec: (string | null)[]) =>
  new ShapeDtypeStruct(shape, "float32", on(...spec));

describe("shardedBytes", () => {
  test("a whole call counts each input's bytes once, however it is sharded or replicated", () => {
    expect(shardedBytes([f32([8, 4], "x", "y")])).toBe(128);
    expect(shardedBytes([f32([8, 4])])).toBe(128); // replicated: one distinct shard
    expect(shardedBytes([f32([8, 4], "x"), f32([], null), f32([16])])).toBe(128 + 4 + 64);
    expect(shardedBytes([new ShapeDtypeStruct([8, 4], "int8", on("y"))])).toBe(32);
  });

  test("a group member counts only the shards its devices hold", () => {
    // The member of `devices` (member 0 of a group of one, the job's first device 0).
    const bytesOn = (devices: number[], spec: ShapeDtypeStruct) => {
      const [shards] = planShards([spec], new Map(devices.map((d) => [d, 0])), 1, 0);
      return shardedBytes([spec], (_, leaf) => shards[leaf]);
    };
    expect(bytesOn([0, 1, 2, 3], f32([8, 4], "x", "y"))).toBe(64);
    expect(bytesOn([0], f32([8, 4], "x", "y"))).toBe(16);
    expect(bytesOn([4, 5, 6, 7], f32([8, 4]))).toBe(128); // its own replica
    expect(bytesOn([0, 4], f32([8, 4], "y"))).toBe(32); // one shard, two devices
  });
});
