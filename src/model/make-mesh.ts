import { DeviceList } from "./device-list";
import { AxisType, Mesh } from "./mesh";

/**
 * makeMesh: a Mesh whose devices are in the order jax.make_mesh puts them (JAX 0.10.2,
 * jax/_src/mesh_utils.py): a TPU slice's chips by their coordinates, so that each axis of the
 * mesh runs along rings of the torus; GPUs by id; any other device in the order given. Its
 * vectors come from JAX's own mesh_utils on synthetic devices (test/vectors/make_mesh.json).
 */

/** A device as makeMesh reads it; the devices of `WorkerGroup.topology` are such devices. */
export interface MeshDevice {
  id: number;
  /** "tpu", "gpu", "cpu", ...; without one, the device is placed in the order given. */
  platform?: string;
  /** jax.Device.device_kind, such as "TPU v5 lite". */
  kind?: string;
  /** A TPU chip's (x, y, z) coordinates. */
  coords?: readonly number[];
  /** The core of its chip (TPU v2, v3, v5p and 7x have two). */
  coreOnChip?: number;
}

/** The options of makeMesh: which devices (by default ids 0 to n-1), and the axis types. */
export interface MakeMeshOptions {
  devices?: readonly (MeshDevice | number)[];
  /** One per axis; jax.make_mesh's default, every axis Explicit. */
  axisTypes?: readonly AxisType[];
}

/** A shape that does not fit the devices: JAX's error type and its message. */
export class MakeMeshError extends Error {
  override readonly name = "MakeMeshError";

  constructor(
    /** The Python exception JAX raises for the same shape and devices. */
    readonly jaxError: "ValueError" | "NotImplementedError" | "AssertionError",
    message: string,
  ) {
    super(message);
  }
}

/** A Mesh of `axisShapes` named `axisNames`, its devices in jax.make_mesh's order. */
export function makeMesh(
  axisShapes: readonly number[],
  axisNames: readonly string[],
  options: MakeMeshOptions = {},
): Mesh {
  const shape = axisShapes.map((s) => {
    if (!Number.isInteger(s)) {
      const detail = `\`axis_shapes\` passed to \`make_mesh\` should be a sequence of ints. Got ${pyTuple(axisShapes)}`;
      throw new MakeMeshError("ValueError", detail);
    }
    return s;
  });
  const size = product(shape);
  const given = (options.devices ?? range(size)).map((d) =>
    typeof d === "number" ? { id: d } : d,
  );
  if (size > given.length) {
    const detail = `Number of devices ${given.length} must be >= the product of mesh_shape ${pyTuple(shape)}`;
    throw new MakeMeshError("ValueError", detail);
  }
  const devices = given.slice(0, size);
  const kind = devices[0]?.kind;
  const split = kind === "TPU v5 lite" || kind === "TPU v5e";
  const ordered = createDeviceMesh(shape, devices, split);
  const axisTypes = options.axisTypes ?? axisNames.map(() => AxisType.Explicit);
  return new Mesh(new DeviceList(ordered.map((d) => d.id)), shape, axisNames, axisTypes);
}

/** mesh_utils.create_device_mesh: the devices in mesh order (row-major over `shape`). */
export function createDeviceMesh(
  shape: readonly number[],
  devices: readonly MeshDevice[],
  allowSplitPhysicalAxes = false,
): MeshDevice[] {
  if (product(shape) !== devices.length) {
    const detail = `Number of devices ${devices.length} must equal the product of mesh_shape ${pyTuple(shape)}`;
    throw new MakeMeshError("ValueError", detail);
  }
  const last = devices[devices.length - 1];
  const handled = HANDLERS[last?.kind ?? ""]?.(shape, devices);
  if (handled !== undefined) return handled;
  if (last?.platform === "tpu") {
    return ndTorusMesh(physicalTpuMesh(devices), shape, allowSplitPhysicalAxes);
  }
  if (last?.platform === "gpu") return [...devices].sort((a, b) => a.id - b.id);
  return [...devices];
}

// Rings of a tray's cores or chips (mesh_utils' _TRAY_*_ORDER).
const TRAY_RING = [0, 1, 2, 3, 6, 7, 4, 5];
const TRAY_2X2_RING = [0, 1, 3, 2];
const TRAY_4X4_RING = [0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4];
const V5E_TRAY_RING = [0, 1, 2, 3, 7, 6, 5, 4];
const V5E_TRAY_IOTA = [0, 4, 2, 6, 1, 5, 3, 7];
const V5P_2X2X2 = [0, 1, 3, 2, 6, 7, 5, 4];
const TPU7X_TRAY_2X2X2_RING = [0, 1, 2, 3, 6, 7, 4, 5];

type Handler = (
  shape: readonly number[],
  devices: readonly MeshDevice[],
) => MeshDevice[] | undefined;

/** The orders of small slices by device kind, tried first (mesh_utils' device_kind_handler_dict). */
const HANDLERS: Record<string, Handler> = {
  "TPU v2": v2v3Mesh,
  "TPU v3": v2v3Mesh,
  "TPU v4 lite": v4iMesh,
  "TPU v5 lite": v5eMesh,
  "TPU v5p": v5pMesh,
  "TPU v6 lite": v5eMesh,
  TPU7x: tpu7xMesh,
  TPU7: tpu7xMesh,
  TPU8i: v4iMesh,
};

function v2v3Mesh(shape: readonly number[], devices: readonly MeshDevice[]): MeshDevice[] {
  if (devices.length === 8) return TRAY_RING.map((i) => devices[i]);
  if (shape[shape.length - 1] === 8) {
    const rows = devices.length / 8;
    return range(rows).flatMap((r) => TRAY_RING.map((i) => devices[r * 8 + i]));
  }
  return [...devices];
}

function v4iMesh(_shape: readonly number[], devices: readonly MeshDevice[]) {
  return devices.length === 4 ? TRAY_2X2_RING.map((i) => devices[i]) : undefined;
}

function v5eMesh(shape: readonly number[], devices: readonly MeshDevice[]) {
  const [bx, by, bz] = bounds(devices);
  const sequential = bySequence(devices);
  if (bx === 2 && by === 2 && bz === 1 && devices.length === 4) {
    return TRAY_2X2_RING.map((i) => sequential[i]);
  }
  if (devices.length === 8) {
    const order = bx === 2 && by === 2 && bz === 2 ? V5E_TRAY_IOTA : V5E_TRAY_RING;
    return order.map((i) => sequential[i]);
  }
  // 4x4: the ring only when the whole mesh is one replica group.
  if (bx === 4 && by === 4 && bz === 1 && devices.length === 16) {
    if (Math.max(...shape) === devices.length) return TRAY_4X4_RING.map((i) => sequential[i]);
  }
  return undefined;
}

function v5pMesh(_shape: readonly number[], devices: readonly MeshDevice[]) {
  const [bx, by, bz] = bounds(devices);
  if (bx === 2 && by === 2 && bz === 2 && devices.length === 8) {
    const sequential = bySequence(devices);
    return V5P_2X2X2.map((i) => sequential[i]);
  }
  return undefined;
}

function tpu7xMesh(_shape: readonly number[], devices: readonly MeshDevice[]) {
  if (devices.length % 8 !== 0 || devices.length > 32) return undefined;
  const physical = physicalTpuMesh(devices).shape;
  if (physical[0] > 2 || physical[1] > 2) return undefined;
  return range(devices.length / 8).flatMap((t) =>
    TPU7X_TRAY_2X2X2_RING.map((i) => devices[t * 8 + i]),
  );
}

/** One past the largest coordinates, taken from the largest (x, y, z) in Python's tuple order. */
function bounds(devices: readonly MeshDevice[]): number[] {
  let max = [0, 0, 0];
  for (const d of devices) {
    const c = [...(d.coords ?? [0, 0, 0])];
    if (compareTuples(c, max) > 0) max = c;
  }
  return max.map((m) => m + 1);
}

/** The devices sorted by z, then y, then x (Python's sort: stable). */
function bySequence(devices: readonly MeshDevice[]): MeshDevice[] {
  const key = (d: MeshDevice) => [...(d.coords ?? [0, 0, 0])].reverse();
  return [...devices].sort((a, b) => compareTuples(key(a), key(b)));
}

/** Devices in a row-major grid of `shape`. */
interface Grid {
  shape: number[];
  items: MeshDevice[];
}

/**
 * mesh_utils._get_physical_tpu_mesh: a slice's devices by (x, y, z) offset from its corner,
 * with the core as a last axis where chips have two (v2 and v3 in place of z).
 */
function physicalTpuMesh(devices: readonly MeshDevice[]): Grid {
  const kind = devices[0].kind ?? "";
  const coords = devices.map((d) => d.coords ?? []);
  const rank = coords[0].length;
  const high = range(rank).map((i) => Math.max(...coords.map((c) => c[i])));
  const low = range(rank).map((i) => Math.min(...coords.map((c) => c[i])));
  const dims = high.map((h, i) => h - low[i] + 1);
  const core = (d: MeshDevice) => d.coreOnChip ?? 0;
  const lowCore = Math.min(...devices.map(core));
  const cores = Math.max(...devices.map(core)) - lowCore + 1;
  if (dims.length !== 3) throw new MakeMeshError("AssertionError", pyTuple(dims));
  if (devices.length !== product(dims) * cores) {
    throw new MakeMeshError(
      "AssertionError",
      `${devices.length} devices, dims=${pyTuple(dims)} cores_per_chip=${cores}`,
    );
  }
  let shape: number[];
  let at: (d: MeshDevice) => number[];
  const offset = (d: MeshDevice) => (d.coords ?? []).map((c, i) => c - low[i]);
  if (kind === "TPU v2" || kind === "TPU v3") {
    shape = [dims[0], dims[1], cores];
    at = (d) => [...offset(d).slice(0, 2), core(d) - lowCore];
  } else if (
    kind === "TPU7x" ||
    kind === "TPU7" ||
    kind === "TPU8i" ||
    (kind === "TPU v5p" && cores === 2)
  ) {
    shape = [...dims, cores];
    at = (d) => [...offset(d), core(d) - lowCore];
  } else {
    shape = dims;
    at = (d) => {
      if (core(d) !== 0) {
        const detail = `Creating meshes for TPU >v3 requires one device per chip ("megacore" mode). Got device id ${core(d)} for a device of kind ${kind}: device ${d.id}.`;
        throw new MakeMeshError("AssertionError", detail);
      }
      return offset(d);
    };
  }
  const items = new Array<MeshDevice | undefined>(product(shape));
  const strides = rowMajorStrides(shape);
  for (const d of devices) items[at(d).reduce((n, c, i) => n + c * strides[i], 0)] = d;
  if (items.some((d) => d === undefined)) {
    const detail =
      'Constructed mesh contains a "hole"; probable cause: coordinates of jax_devices are not a contiguous cuboid';
    throw new MakeMeshError("AssertionError", detail);
  }
  return { shape, items: items as MeshDevice[] };
}

/**
 * mesh_utils._create_device_mesh_for_nd_torus: each logical axis, the last first, takes the
 * most physical axes whose sizes multiply to its size; when none do, JAX's error, or (for
 * v5e) physical axes split between logical ones.
 */
function ndTorusMesh(physical: Grid, shape: readonly number[], allowSplit: boolean): MeshDevice[] {
  const rank = physical.shape.length;
  let assignable = [...physical.shape];
  const assignment: number[][] = shape.map(() => []);
  for (let logical = shape.length - 1; logical >= 0; logical--) {
    const size = shape[logical];
    found: for (let count = rank; count > 0; count--) {
      for (const axes of combinations(range(rank), count)) {
        if (product(axes.map((a) => assignable[a])) === size) {
          assignment[logical] = axes;
          assignable = assignable.map((v, i) => (axes.includes(i) ? 0 : v));
          break found;
        }
      }
    }
    if (assignment[logical].length === 0 && size > 1) {
      if (allowSplit) return splitAxesMesh(physical, shape);
      const detail = `Failed to find assignment for logical_axis_index ${logical} of size ${size} with remaining assignable mesh [${assignable.join(", ")}]. The size of each axis in your logical mesh must be equal to the product of some subset of the physical mesh axis sizes. E.g. logical mesh (4, 16) is compatible with physical mesh 4x4x4 since 4=4 and 16=4x4. If you want to split physical axes, set  allow_split_physical_axes to True.`;
      throw new MakeMeshError("NotImplementedError", detail);
    }
  }
  const order = assignment.flat();
  if (order.length !== rank) throw new MakeMeshError("ValueError", "axes don't match array");
  return transpose(physical, order).items;
}

/** mesh_utils._create_device_mesh_for_nd_torus_splitting_axes. */
function splitAxesMesh(physical: Grid, shape: readonly number[]): MeshDevice[] {
  const rank = physical.shape.length;
  // assignment[p][l]: the part of physical axis p given to logical axis l.
  const assignment = physical.shape.map(() => shape.map(() => 1));
  for (let logical = shape.length - 1; logical >= 0; logical--) {
    let best: number[] | undefined;
    for (const candidate of feasibleAssignments(physical.shape, assignment, shape[logical])) {
      if (best === undefined || prefer(candidate, best, physical.shape, assignment))
        best = candidate;
    }
    if (best === undefined) {
      const detail = `no assignment of logical axis ${logical} of size ${shape[logical]} to physical mesh ${pyTuple(physical.shape)}`;
      throw new MakeMeshError("ValueError", detail);
    }
    for (let p = 0; p < rank; p++) assignment[p][logical] = best[p];
  }
  // Each physical axis split into one part per logical axis, then the parts gathered by
  // logical axis (mesh_utils._generate_logical_mesh).
  const parts: Grid = { shape: assignment.flat(), items: physical.items };
  const axes = range(rank * shape.length).sort((a, b) => {
    const [pa, la] = [Math.floor(a / shape.length), a % shape.length];
    const [pb, lb] = [Math.floor(b / shape.length), b % shape.length];
    return la - lb || pa - pb;
  });
  return transpose(parts, axes).items;
}

/** mesh_utils._enumerate_feasible_logical_axis_assignments. */
function* feasibleAssignments(
  physical: readonly number[],
  assignment: readonly number[][],
  size: number,
): Generator<number[]> {
  const multiplicity = new Map<number, number>();
  for (const f of primeFactors(size)) multiplicity.set(f, (multiplicity.get(f) ?? 0) + 1);
  const available = physical.map((s, p) => Math.floor(s / product(assignment[p])));
  const axesByFactor = new Map<number, number[]>();
  available.forEach((s, p) => {
    for (const f of primeFactors(s)) {
      if (multiplicity.has(f)) axesByFactor.set(f, [...(axesByFactor.get(f) ?? []), p]);
    }
  });
  const factors = [...multiplicity.keys()];
  const choices = factors.map((f) =>
    uniqueTuples(combinations(axesByFactor.get(f) ?? [], multiplicity.get(f) ?? 0)),
  );
  for (const pick of cartesian(choices)) {
    const result = physical.map(() => 1);
    pick.forEach((axes, i) => {
      for (const p of axes) result[p] *= factors[i];
    });
    yield result;
  }
}

/** mesh_utils._prefer_first_logical_axis_assignment: whether `x` is preferred over `y`. */
function prefer(
  x: readonly number[],
  y: readonly number[],
  physical: readonly number[],
  assignment: readonly number[][],
): boolean {
  const whole = (a: readonly number[]) => product(a.filter((s, i) => s === physical[i]));
  if (whole(x) !== whole(y)) return whole(x) > whole(y);
  const wholeAxes = (a: readonly number[]) => a.filter((s, i) => s === physical[i] && s > 1).length;
  if (wholeAxes(x) !== wholeAxes(y)) return wholeAxes(x) > wholeAxes(y);
  const assigned = assignment.map((row) => product(row));
  const overlapping = (a: readonly number[]) => product(a.filter((_, i) => assigned[i] > 1));
  if (overlapping(x) !== overlapping(y)) return overlapping(x) > overlapping(y);
  return compareTuples(x, y) > 0;
}

/** mesh_utils._get_prime_factors, as it is: a number whose last factor is large gives [that factor]. */
function primeFactors(n: number): number[] {
  const factors: number[] = [];
  let x = n;
  for (let p = 2; p < Math.floor(Math.sqrt(x)) + 2; p++) {
    while (x % p === 0) {
      factors.push(p);
      x /= p;
    }
    if (x === 1) return factors;
  }
  return [x];
}

/** numpy's transpose of a row-major grid. */
function transpose(grid: Grid, axes: readonly number[]): Grid {
  const shape = axes.map((a) => grid.shape[a]);
  const from = rowMajorStrides(grid.shape);
  const strides = axes.map((a) => from[a]);
  const items: MeshDevice[] = [];
  const index = shape.map(() => 0);
  for (let n = 0; n < grid.items.length; n++) {
    items.push(grid.items[index.reduce((s, i, k) => s + i * strides[k], 0)]);
    for (let k = shape.length - 1; k >= 0; k--) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return { shape, items };
}

function rowMajorStrides(shape: readonly number[]): number[] {
  const strides = shape.map(() => 1);
  for (let k = shape.length - 2; k >= 0; k--) strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}

/** itertools.combinations: `k` of `items`, in its order. */
function combinations<T>(items: readonly T[], k: number): T[][] {
  if (k === 0) return [[]];
  return items.flatMap((item, i) =>
    combinations(items.slice(i + 1), k - 1).map((c) => [item, ...c]),
  );
}

function uniqueTuples(tuples: number[][]): number[][] {
  const seen = new Map(tuples.map((t) => [t.join(","), t]));
  return [...seen.values()];
}

/** itertools.product of the choices. */
function cartesian(choices: readonly number[][][]): number[][][] {
  return choices.reduce<number[][][]>(
    (acc, options) => acc.flatMap((picked) => options.map((o) => [...picked, o])),
    [[]],
  );
}

function compareTuples(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function product(values: readonly number[]): number {
  return values.reduce((a, b) => a * b, 1);
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** A shape as Python prints a tuple: (8,) and (2, 4). */
function pyTuple(values: readonly unknown[]): string {
  return values.length === 1 ? `(${values[0]},)` : `(${values.join(", ")})`;
}
