import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AxisType, MakeMeshError, type MeshDevice, makeMesh } from "../src";

// makeMesh against jax.make_mesh: test/vectors/make_mesh.json is what JAX's own mesh_utils
// makes of synthetic TPU slices, GPUs and CPUs (python/tests/make_mesh_vectors.py; pytest checks
// that JAX still makes it), each case a device order or the error JAX raises.

interface Case {
  devices: MeshDevice[];
  shape: number[];
  want: number[] | string;
}

const FILE = join(__dirname, "vectors", "make_mesh.json");
const { jax, cases } = JSON.parse(readFileSync(FILE, "utf8")) as { jax: string; cases: Case[] };

test("the vectors cover every TPU kind with an order of its own, GPUs, CPUs and JAX's errors", () => {
  const kinds = new Set(cases.map((c) => c.devices[0].kind));
  for (const kind of [
    "TPU v3",
    "TPU v4",
    "TPU v5 lite",
    "TPU v5p",
    "TPU v6 lite",
    "TPU7x",
    "cpu",
  ]) {
    expect(kinds).toContain(kind);
  }
  expect(cases.filter((c) => typeof c.want === "string").length).toBeGreaterThan(5);
  expect(jax).toMatch(/^\d+\.\d+\.\d+/);
});

describe.each(
  cases.map(
    (c) => [`${c.devices[0].kind} ×${c.devices.length} as ${c.shape.join("x")}`, c] as const,
  ),
)("%s", (_, c) => {
  test("makeMesh orders the devices as jax.make_mesh does, or fails as it does", () => {
    const names = c.shape.map((_, i) => `a${i}`);
    if (typeof c.want === "string") {
      let error: unknown;
      try {
        makeMesh(c.shape, names, { devices: c.devices });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(MakeMeshError);
      const { jaxError, message } = error as MakeMeshError;
      expect(`${jaxError}: ${message}`).toBe(c.want);
      return;
    }
    const mesh = makeMesh(c.shape, names, { devices: c.devices });
    expect([...mesh.devices.ids]).toEqual(c.want);
    expect([mesh.axisSizes, mesh.axisNames]).toEqual([c.shape, names]);
  });
});

test("without devices, ids 0 to n-1 in order; every axis Explicit unless told", () => {
  const mesh = makeMesh([2, 4], ["x", "y"]);
  expect([...mesh.devices.ids]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  expect(mesh.axisTypes).toEqual([AxisType.Explicit, AxisType.Explicit]);
  const auto = makeMesh([8], ["x"], {
    devices: [7, 6, 5, 4, 3, 2, 1, 0],
    axisTypes: [AxisType.Auto],
  });
  expect([[...auto.devices.ids], auto.axisTypes]).toEqual([
    [7, 6, 5, 4, 3, 2, 1, 0],
    [AxisType.Auto],
  ]);
});

test("a shape of more devices than given is JAX's ValueError, naming both", () => {
  expect(() => makeMesh([4, 4], ["x", "y"], { devices: [0, 1, 2] })).toThrow(
    new MakeMeshError(
      "ValueError",
      "Number of devices 3 must be >= the product of mesh_shape (4, 4)",
    ),
  );
  expect(() => makeMesh([2.5], ["x"])).toThrow(MakeMeshError);
});

test("the devices of a worker's topology are valid input", () => {
  const job = [0, 1, 2, 3].map((id) => ({
    id,
    processIndex: id >> 1,
    platform: "cpu",
    kind: "cpu",
    coords: [],
  }));
  expect([...makeMesh([2, 2], ["x", "y"], { devices: job }).devices.ids]).toEqual([0, 1, 2, 3]);
});
