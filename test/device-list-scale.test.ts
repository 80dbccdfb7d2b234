import fc from "fast-check";
import { DeviceList as Message } from "../gen/ts/colocated/v1/table";
import * as wire from "../src";
import {
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  findIota,
  type Iota,
  Mesh,
  materializeIota,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";
import { deviceIdsProblem, listedSizes } from "../src/entries/device-list";
import { deviceIdsOf, pendingIota } from "../src/model/device-list";

/** numpy's arange(prod(dims)).reshape(dims).transpose(perm).flatten(), by index arithmetic. */
function bruteIota(dims: readonly number[], perm: readonly number[], offset = 0): number[] {
  const size = dims.reduce((a, b) => a * b, 1);
  const rowMajor = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
  const outDims = perm.map((p) => dims[p]);
  const out: number[] = [];
  for (let flat = 0; flat < size; flat++) {
    let rest = flat;
    let value = offset;
    for (let k = outDims.length - 1; k >= 0; k--) {
      value += (rest % outDims[k]) * rowMajor[perm[k]];
      rest = Math.floor(rest / outDims[k]);
    }
    out.push(value);
  }
  return out;
}

/** Every ordered factorization of n into factors of at least 2. */
function factorizations(n: number): number[][] {
  if (n === 1) return [[]];
  const out: number[][] = [];
  for (let f = 2; f <= n; f++) {
    if (n % f === 0) for (const rest of factorizations(n / f)) out.push([f, ...rest]);
  }
  return out;
}

function permutations(k: number): number[][] {
  if (k === 0) return [[]];
  return permutations(k - 1).flatMap((p) =>
    Array.from({ length: k }, (_, i) => [...p.slice(0, i), k - 1, ...p.slice(i)]),
  );
}

/** Whether some iota (any dims, any permutation) writes exactly q - offset: by trying them all. */
function bruteHasIota(q: readonly number[], offset: number): boolean {
  if (q.length === 0) return false;
  return factorizations(q.length).some((dims) =>
    permutations(dims.length).some((perm) => {
      const ids = bruteIota(dims, perm, offset);
      return ids.every((v, i) => v === q[i]);
    }),
  );
}

const shape = fc
  .array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 4 })
  .filter((dims) => dims.reduce((a, b) => a * b, 1) <= 240);
const shapeAndPerm = shape.chain((dims) =>
  fc.tuple(
    fc.constant(dims),
    fc.shuffledSubarray(
      dims.map((_, i) => i),
      { minLength: dims.length, maxLength: dims.length },
    ),
    fc.integer({ min: 0, max: 1000 }),
  ),
);

describe("the iota finder and expander, against brute force", () => {
  test("expanding writes numpy's transposed arange", () => {
    fc.assert(
      fc.property(shapeAndPerm, ([dims, perm, offset]) => {
        const iota: Iota = { reshapeDims: dims, transposePerm: perm };
        expect(Array.from(materializeIota(iota, offset))).toEqual(bruteIota(dims, perm, offset));
      }),
    );
  });

  test("every transposed arange is found, and its form writes it back", () => {
    fc.assert(
      fc.property(shapeAndPerm, ([dims, perm, offset]) => {
        const ids = bruteIota(dims, perm, offset);
        const iota = findIota(ids, offset);
        expect(iota).toBeDefined();
        expect(Array.from(materializeIota(iota as Iota, offset))).toEqual(ids);
        // The same on a typed array.
        expect(findIota(Int32Array.from(ids), offset)).toEqual(iota);
      }),
    );
  });

  test("a form is found exactly when one exists (shuffles and near misses)", () => {
    const smallIds = fc.oneof(
      // Shuffles of 0..n-1, plus an offset.
      fc
        .integer({ min: 1, max: 24 })
        .chain((n) =>
          fc.tuple(
            fc.shuffledSubarray(
              Array.from({ length: n }, (_, i) => i),
              { minLength: n, maxLength: n },
            ),
            fc.integer({ min: 0, max: 5 }),
          ),
        )
        .map(([ids, offset]) => ids.map((id) => id + offset)),
      // Transposed aranges with one element moved or changed.
      shapeAndPerm
        .filter(([dims]) => dims.reduce((a, b) => a * b, 1) <= 24)
        .chain(([dims, perm, offset]) => {
          const ids = bruteIota(dims, perm, offset);
          return fc
            .tuple(fc.nat(ids.length - 1), fc.integer({ min: -2, max: 2 }))
            .map(([at, by]) => ids.map((v, i) => (i === at ? Math.max(0, v + by) : v)));
        }),
    );
    fc.assert(
      fc.property(smallIds, (ids) => {
        const offset = Math.min(...ids);
        const iota = findIota(ids, offset);
        expect(iota !== undefined).toBe(bruteHasIota(ids, offset));
        if (iota) expect(Array.from(materializeIota(iota, offset))).toEqual(ids);
      }),
      { numRuns: 300 },
    );
  });
});

describe("device id checks and sizes", () => {
  /** The check as first written: range first, then the first repeat, with a Set. */
  function referenceProblem(ids: readonly number[]): string | undefined {
    const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id > 0x7fffffff);
    if (bad >= 0) return `invalid-value [${bad}]`;
    const seen = new Set<number>();
    for (const [i, id] of ids.entries()) {
      if (seen.has(id)) return `duplicate-device [${i}]`;
      seen.add(id);
    }
    return undefined;
  }

  test("deviceIdsProblem finds what the reference finds, dense or sparse", () => {
    const id = fc.oneof(
      fc.integer({ min: 0, max: 40 }),
      fc.integer({ min: 0, max: 0x7fffffff }),
      fc.constantFrom(-1, 0x80000000, 1.5),
    );
    fc.assert(
      fc.property(fc.array(id, { maxLength: 60 }), (ids) => {
        const p = deviceIdsProblem(ids);
        expect(p ? `${p.code} ${p.at}` : undefined).toBe(referenceProblem(ids));
      }),
    );
  });

  test("the plain and delta sizes counted without encoding are the encoded sizes", () => {
    const ids = fc.uniqueArray(fc.integer({ min: 0, max: 0x7fffffff }), {
      minLength: 1,
      maxLength: 50,
    });
    fc.assert(
      fc.property(ids, (list) => {
        const deltas = list.map((v, i) => v - (i > 0 ? list[i - 1] : 0));
        const size = (m: Message) => Message.encode(m).finish().length;
        expect(listedSizes(list)).toEqual({
          plain: size({ ids: { $case: "plain", value: { ids: list } } }),
          delta: size({ ids: { $case: "delta", value: { deltas } } }),
        });
      }),
    );
  });
});

/** 100 leaves on an (n/8)x8 mesh, every object new. */
function specsOn(api: typeof wire, ids: readonly number[], freshShardings = false) {
  const mesh = new api.Mesh(new api.DeviceList(ids), [ids.length / 8, 8], ["data", "model"]);
  const shared = new api.NamedSharding(mesh, new api.PartitionSpec("data", "model"));
  const leaves = Array.from(
    { length: 100 },
    (_, i) =>
      new api.ShapeDtypeStruct(
        [1024, 512],
        "float32",
        freshShardings && i % 2
          ? new api.NamedSharding(mesh, new api.PartitionSpec(null, "model"))
          : shared,
      ),
  );
  return api.treeFlatten<InstanceType<typeof api.ShapeDtypeStruct>>(leaves);
}

function shuffled(n: number, seed: number): number[] {
  const ids = Array.from({ length: n }, (_, i) => i);
  let s = seed;
  for (let i = n - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  return ids;
}

describe("lowering once per process", () => {
  const orders = {
    regular: Array.from({ length: 4096 }, (_, i) => i),
    shuffled: shuffled(4096, 7),
  };

  test.each(Object.entries(orders))(
    "%s: bytes from the caches equal bytes from empty caches",
    (_, ids) => {
      // A fresh copy of the library: every cache empty, nothing lowered before.
      let fresh: Uint8Array | undefined;
      jest.isolateModules(() => {
        const api = require("../src") as typeof wire;
        const { treedef, leaves } = specsOn(api, ids, true);
        fresh = api.encodeSpecs(treedef, leaves);
      });
      const first = specsOn(wire, ids, true);
      const once = encodeSpecs(first.treedef, first.leaves);
      // The same objects (hits by identity) and equal new ones (hits by value).
      const again = encodeSpecs(first.treedef, first.leaves);
      const equal = specsOn(wire, [...ids], true);
      const byValue = encodeSpecs(equal.treedef, equal.leaves);
      expect(Buffer.from(once)).toEqual(Buffer.from(fresh as Uint8Array));
      expect(Buffer.from(again)).toEqual(Buffer.from(once));
      expect(Buffer.from(byValue)).toEqual(Buffer.from(once));
    },
  );

  test("a list with a repeated id is refused every time: refusals are not cached", () => {
    const bad = specsOn(wire, [...orders.regular.slice(0, 4095), 0]);
    expect(() => encodeSpecs(bad.treedef, bad.leaves)).toThrow(/appears twice/);
    expect(() => encodeSpecs(bad.treedef, bad.leaves)).toThrow(/appears twice/);
  });
});

describe("a device list read as an iota", () => {
  const n = 65_536;
  const ids = Array.from({ length: n }, (_, i) => i);

  test("keeps its iota until its ids are asked for, and behaves as the list it stands for", () => {
    const { treedef, leaves } = specsOn(wire, ids);
    const back = decodeSpecs(encodeSpecs(treedef, leaves));
    const sharding = back.leaves[0].sharding as NamedSharding;
    const lifted = sharding.mesh.devices;
    expect(pendingIota(lifted)).toBeDefined();
    expect(lifted.size).toBe(n);
    const explicit = new DeviceList(ids);
    expect(lifted.equals(explicit)).toBe(true);
    expect(lifted.hash()).toBe(explicit.hash());
    expect(lifted.equals(new DeviceList([...ids.slice(1), 0]))).toBe(false);
    expect(sharding.mesh.equals((leaves[0].sharding as NamedSharding).mesh)).toBe(true);
    expect(lifted.ids).toEqual(ids);
    expect(Array.from(deviceIdsOf(lifted))).toEqual(ids);
    expect(pendingIota(lifted)).toBeUndefined();
    expect(back.leaves.every((leaf, i) => leaf.equals(leaves[i]))).toBe(true);
  });

  test("a key stays short however many ids the list has", () => {
    const list = new DeviceList(ids);
    const mesh = new Mesh(list, [n / 8, 8], ["data", "model"]);
    expect(list.key.length).toBeLessThan(40);
    expect(mesh.key.length).toBeLessThan(120);
    expect(new DeviceList([...ids]).key).toBe(list.key);
    expect(new DeviceList([1, ...ids.slice(2), 0]).key).not.toBe(list.key);
  });

  test("lists with wrong ids keep them as given, and compare as the values they are", () => {
    const bad = new DeviceList([0, -1, 1.5, 2 ** 31]);
    expect(bad.ids).toEqual([0, -1, 1.5, 2 ** 31]);
    expect(bad.equals(new DeviceList([0, -1, 1.5, 2 ** 31]))).toBe(true);
    expect(bad.equals(new DeviceList([0, -1, 1.5, 2 ** 31 + 1]))).toBe(false);
  });
});

describe("the caches keep no model object alive", () => {
  const gc = (() => {
    require("node:v8").setFlagsFromString("--expose-gc");
    return require("node:vm").runInNewContext("gc") as () => void;
  })();
  /** A macrotask: WeakRefs made during a job keep their targets until the job ends. */
  const nextTask = () => new Promise<void>((resolve) => setImmediate(resolve));

  /** Lowers, decodes and compares objects, and returns weak references to every one of them. */
  function useAndDrop(ids: number[]): WeakRef<object>[] {
    const { treedef, leaves } = specsOn(wire, ids, true);
    const bytes = encodeSpecs(treedef, leaves);
    encodeSpecs(treedef, leaves);
    const back = decodeSpecs(bytes);
    const mesh = (leaves[0].sharding as NamedSharding).mesh;
    const liftedMesh = (back.leaves[0].sharding as NamedSharding).mesh;
    expect(liftedMesh.equals(mesh)).toBe(true);
    return [
      mesh,
      mesh.devices,
      leaves[0].sharding as object,
      leaves[1].sharding as object,
      leaves[0],
      liftedMesh,
      liftedMesh.devices,
      back.leaves[1],
    ].map((o) => new WeakRef(o));
  }

  test.each([
    ["regular", Array.from({ length: 1024 }, (_, i) => i)],
    ["shuffled", shuffled(1024, 3)],
  ])("%s: once dropped, every object lowered or lifted is collected", async (_, ids) => {
    const refs = useAndDrop(ids);
    await nextTask();
    gc();
    gc();
    expect(refs.map((ref) => ref.deref())).toEqual(refs.map(() => undefined));
  });

  test("an equal list made later still finds the cached value while an older one lives", () => {
    const ids = shuffled(2048, 11);
    const first = new DeviceList(ids);
    const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>([
      new ShapeDtypeStruct(
        [8],
        "float32",
        new NamedSharding(new Mesh(first, [256, 8], ["a", "b"]), new PartitionSpec("a")),
      ),
    ]);
    const bytes = encodeSpecs(treedef, leaves);
    const second = new DeviceList([...ids]);
    expect(second.key).toBe(first.key);
    const other = treeFlatten<ShapeDtypeStruct>([
      new ShapeDtypeStruct(
        [8],
        "float32",
        new NamedSharding(new Mesh(second, [256, 8], ["a", "b"]), new PartitionSpec("a")),
      ),
    ]);
    expect(Buffer.from(encodeSpecs(other.treedef, other.leaves))).toEqual(Buffer.from(bytes));
  });
});
