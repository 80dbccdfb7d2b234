import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeSpecs } from "../src/decode";
import { NamedSharding } from "../src/model/sharding";
import {
  devicesIndicesMap,
  distinctShards,
  ShardIndexError,
  shardShape,
} from "../src/shard-indices";

/** JAX's answers, written by python/tests/shard_index_cases.py. */
interface Case {
  name: string;
  shape: number[];
  specs: string;
  shardShape?: number[];
  devices?: { device: number; start: number[]; stop: number[] }[];
  error?: string;
}

const FILE = join(__dirname, "vectors", "shard_indices.json");
const CASES: Case[] = JSON.parse(readFileSync(FILE, "utf8")).cases;

function shardingOf(c: Case) {
  const specs = decodeSpecs(Buffer.from(c.specs, "base64"));
  const sharding = specs.leaves[0].sharding;
  if (sharding === null) throw new Error(`${c.name}: the vector's leaf has no sharding`);
  return sharding;
}

test("the vectors cover even, uneven, replicated and refused cases", () => {
  const names = CASES.map((c) => c.name);
  expect(names.filter((n) => n.startsWith("uneven_")).length).toBeGreaterThanOrEqual(3);
  expect(names).toEqual(
    expect.arrayContaining(["gspmd_replicate_last", "named_2x4_x_replicated_y"]),
  );
  expect(CASES.filter((c) => c.error === undefined).length).toBeGreaterThanOrEqual(25);
});

describe.each(CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
  if (c.error !== undefined) {
    test(`is refused as JAX refuses it (${c.error})`, () => {
      const sharding = shardingOf(c);
      for (const compute of [shardShape, devicesIndicesMap]) {
        let thrown: unknown;
        try {
          compute(sharding, c.shape);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ShardIndexError);
        expect((thrown as ShardIndexError).kind).toBe(c.error);
      }
    });
  } else {
    test("gives JAX's shard shape and devices_indices_map", () => {
      const sharding = shardingOf(c);
      expect(shardShape(sharding, c.shape)).toEqual(c.shardShape);
      const map = devicesIndicesMap(sharding, c.shape).map(({ device, index }) => ({
        device,
        start: index.start,
        stop: index.stop,
      }));
      expect(map).toEqual(c.devices);
    });
  }
});

test("distinct shards: a partly replicated sharding sends each slice once, with all its devices", () => {
  const c = CASES.find((x) => x.name === "named_2x4_x_replicated_y") as Case;
  const sharding = shardingOf(c);
  expect(sharding).toBeInstanceOf(NamedSharding);
  const shards = distinctShards(sharding, c.shape);
  expect(shards.map((s) => [s.index.start, s.index.stop, s.devices])).toEqual([
    [
      [0, 0],
      [4, 4],
      [0, 1, 2, 3],
    ],
    [
      [4, 0],
      [8, 4],
      [4, 5, 6, 7],
    ],
  ]);
});
