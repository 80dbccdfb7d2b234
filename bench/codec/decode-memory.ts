import { execFileSync } from "node:child_process";
import {
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  treeFlatten,
} from "../../src/index";
import type { DecodeMemory } from "./results";

/** A million devices, in order: their ids would take 4 MiB written out. */
export const MEMORY_DEVICES = 1_048_576;

/**
 * Decodes 100 leaves on an in-order mesh of MEMORY_DEVICES devices in a child process (a fresh
 * heap, with gc exposed) and returns what decoding allocated. Heap readings belong here, in the
 * bench, never in tests.
 */
export function measureDecodeMemory(): DecodeMemory {
  const out = execFileSync(process.execPath, ["--expose-gc", __filename, "--child"], {
    encoding: "utf8",
  });
  return JSON.parse(out) as DecodeMemory;
}

function child(): DecodeMemory {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --expose-gc");
  const n = MEMORY_DEVICES;
  const payload = (() => {
    const mesh = new Mesh(
      new DeviceList(Array.from({ length: n }, (_, i) => i)),
      [n / 8, 8],
      ["data", "model"],
    );
    const sharding = new NamedSharding(mesh, new PartitionSpec("data", "model"));
    const leaves = Array.from(
      { length: 100 },
      () => new ShapeDtypeStruct([1024, 512], "float32", sharding),
    );
    const { treedef, leaves: flat } = treeFlatten<ShapeDtypeStruct>(leaves);
    return encodeSpecs(treedef, flat);
  })();
  decodeSpecs(payload); // loads and compiles the decoder, so the reading below is decoding alone
  gc();
  gc();
  const used = () => {
    const m = process.memoryUsage();
    return { heap: m.heapUsed + m.arrayBuffers, rss: m.rss };
  };
  const before = used();
  const specs = decodeSpecs(payload);
  const decoded = used();
  const sharding = specs.leaves[0].sharding as NamedSharding;
  const ids = sharding.mesh.devices.ids;
  const asked = used();
  if (ids.length !== n || ids[n - 1] !== n - 1) throw new Error("the mesh came back wrong");
  return {
    devices: n,
    payloadBytes: payload.length,
    decodeBytes: decoded.heap - before.heap,
    idsBytes: asked.heap - decoded.heap,
    rssBytes: decoded.rss - before.rss,
  };
}

if (require.main === module && process.argv.includes("--child")) {
  process.stdout.write(JSON.stringify(child()));
}
