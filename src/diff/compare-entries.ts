/**
 * Table objects compared by value, each pair of entries once: an entry of one payload faces an
 * entry of the other by what it holds, so a reordered table is no difference, and 10,000 leaves
 * on 16 shardings cost 16 comparisons. Python: diff/compare_entries.py, over the messages.
 */
import { type DeviceList, deviceIdsOf, pendingIota } from "../model/device-list";
import { Mesh } from "../model/mesh";
import { FunctionRef, type SharedObject } from "../model/program";
import { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { GSPMDSharding, NamedSharding, SingleDeviceSharding } from "../model/sharding";
import {
  DTypeValue,
  PickledValue,
  PRNGImpl,
  UnknownValueLeaf,
  type ValueLeaf,
} from "../model/value-leaf";
import {
  axisSetText,
  change,
  memoryKindText,
  pyStr,
  pyTuple,
  shapeText,
  specEntriesJson,
  specEntriesText,
  thousands,
} from "./describe";
import { deviceOrderDetail } from "./device-order";
import { type Cause, valueCause } from "./groups";
import type { DiffDetail, Json } from "./payload-diff";
import type { DiffSide } from "./read-side";

/** The comparisons of one pair of payloads, remembered by pair of entries. */
export class EntryComparison {
  // Leaf specs by pair in an array when the tables are small (they are: a few shardings and
  // specs), else in a map: this is looked up once per leaf.
  readonly #leafPairs: (Cause[] | undefined)[] | undefined;
  readonly #arraySpecs = new Map<number, Cause[]>();
  readonly #shardings = new Map<number, Cause[]>();
  readonly #meshes = new Map<number, Cause | null>();
  readonly #values = new Map<string, Cause[]>();
  readonly #width: number;

  constructor(
    readonly a: DiffSide,
    readonly b: DiffSide,
  ) {
    this.#width = b.objects.length + 1;
    const pairs = (a.objects.length + 1) * this.#width;
    if (pairs <= 1 << 16) this.#leafPairs = new Array(pairs);
  }

  /** How leaf spec `ia` of A differs from `ib` of B ([] when equal), each pair compared once. */
  arraySpecs(ia: number, ib: number): Cause[] {
    const key = ia * this.#width + ib;
    const pairs = this.#leafPairs;
    let causes = pairs ? pairs[key] : this.#arraySpecs.get(key);
    if (causes === undefined) {
      causes = this.#compareArraySpecs(ia, ib);
      if (pairs) pairs[key] = causes;
      else this.#arraySpecs.set(key, causes);
    }
    return causes;
  }

  /** How sharding `sa` of A differs from `sb` of B (-1: none): the sharding's cause, its mesh's. */
  shardings(sa: number, sb: number): Cause[] {
    const key = (sa + 1) * this.#width + sb + 1;
    let causes = this.#shardings.get(key);
    if (causes === undefined) {
      causes = this.#compareShardings(sa, sb);
      this.#shardings.set(key, causes);
    }
    return causes;
  }

  /** How mesh `ma` of A differs from `mb` of B, or null. */
  meshes(ma: number, mb: number): Cause | null {
    const key = ma * this.#width + mb;
    let cause = this.#meshes.get(key);
    if (cause === undefined) {
      cause = this.#compareMeshes(ma, mb);
      this.#meshes.set(key, cause);
    }
    return cause;
  }

  /** How entry `ia` of A differs from `ib` of B, whatever their kinds (a pickle's refs). */
  entries(ia: number, ib: number): Cause[] {
    const x = this.a.objects[ia] as SharedObject;
    const y = this.b.objects[ib] as SharedObject;
    const ka = kindName(x);
    const kb = kindName(y);
    if (ka !== kb) return [valueCause("leaf_kind", ka, kb, change(ka, kb))];
    if (x instanceof ShapeDtypeStruct) return this.arraySpecs(ia, ib);
    if (x instanceof Mesh) return [this.meshes(ia, ib)].filter((c): c is Cause => c !== null);
    if (ka === "DeviceList") {
      const detail = devicesDetail("devices", x as DeviceList, y as DeviceList);
      return detail ? [entryCause("devices", ia, ib, "device list", [detail], ka, kb)] : [];
    }
    return this.shardings(ia, ib);
  }

  /**
   * How a value's leaf `ra` of A differs from `rb` of B (PartSide.leafRefs: an entry, or
   * -2 - a written position), each pair once.
   */
  valueLeaves(ra: number, rb: number): Cause[] {
    if (ra >= 0 && rb >= 0) return this.entries(ra, rb);
    const key = `${ra},${rb}`;
    let causes = this.#values.get(key);
    if (causes === undefined) {
      causes = this.#compareValueLeaves(ra, rb);
      this.#values.set(key, causes);
    }
    return causes;
  }

  #compareValueLeaves(ra: number, rb: number): Cause[] {
    const x = ra >= 0 ? null : this.a.values[-2 - ra];
    const y = rb >= 0 ? null : this.b.values[-2 - rb];
    const ka = x ? valueKindName(x.leaf) : kindName(this.a.objects[ra] as SharedObject);
    const kb = y ? valueKindName(y.leaf) : kindName(this.b.objects[rb] as SharedObject);
    if (ka !== kb || !x || !y) return [valueCause("leaf_kind", ka, kb, change(ka, kb))];
    const [p, q] = [x.leaf, y.leaf];
    if (p instanceof DTypeValue && q instanceof DTypeValue) {
      const [da, db] = [dtypeText(p), dtypeText(q)];
      if (da !== db) return [valueCause("dtype", da, db, `dtype ${change(da, db)}`)];
      const [sa, sb] = [p.keyType?.keyShape ?? [], q.keyType?.keyShape ?? []];
      if (sameNumbers(sa, sb)) return [];
      return [
        valueCause(
          "key_shape",
          [...sa],
          [...sb],
          `key shape ${change(shapeText(sa), shapeText(sb))}`,
        ),
      ];
    }
    if (p instanceof PRNGImpl && q instanceof PRNGImpl) {
      const [ia, ib] = [prngText(p), prngText(q)];
      if (ia === ib) return [];
      const json = (impl: PRNGImpl) => ({ name: impl.name, keyShape: [...impl.keyShape] });
      return [valueCause("prng_impl", json(p), json(q), `PRNG impl ${change(ia, ib)}`)];
    }
    if (p instanceof FunctionRef && q instanceof FunctionRef) {
      const [fa, fb] = [`${p.module}.${p.qualname}`, `${q.module}.${q.qualname}`];
      return fa === fb ? [] : [valueCause("function", fa, fb, `function ${change(fa, fb)}`)];
    }
    if (p instanceof PickledValue && q instanceof PickledValue) {
      const details = this.pickleDetails(p.pickle, q.pickle, x.refs, y.refs);
      if (details.length === 0) return [];
      const text = ["pickle", ...details.map((d) => d.text)].join(", ");
      const cause = valueCause("pickle", p.pickle.length, q.pickle.length, text);
      return [{ ...cause, key: `pickle|${ra}|${rb}`, details }];
    }
    const [ba, bb] = [(p as UnknownValueLeaf).bytes, (q as UnknownValueLeaf).bytes];
    if (sameNumbers(ba, bb)) return [];
    return [
      valueCause("leaf", ba.length, bb.length, "a leaf of a newer minor version: it differs"),
    ];
  }

  /** A pickle's bytes, then how many refs, then each ref compared by value. */
  pickleDetails(
    pa: Uint8Array,
    pb: Uint8Array,
    refsA: readonly number[],
    refsB: readonly number[],
  ): DiffDetail[] {
    const details: DiffDetail[] = [];
    if (!sameNumbers(pa, pb)) {
      const text = `the pickle differs (${change(thousands(pa.length), `${thousands(pb.length)} bytes`)})`;
      details.push(fieldDetail("pickle", pa.length, pb.length, text));
    }
    if (refsA.length !== refsB.length) {
      const [na, nb] = [refsA.length, refsB.length];
      details.push(fieldDetail("refs", na, nb, `refs ${change(String(na), String(nb))}`));
    }
    for (let i = 0; i < Math.min(refsA.length, refsB.length); i++) {
      const causes = this.entries(refsA[i], refsB[i]);
      if (causes.length === 0) continue;
      const text = `ref ${i}: ${causes.map((c) => c.text).join("; ")}`;
      details.push(fieldDetail(`refs[${i}]`, refsA[i], refsB[i], text));
    }
    return details;
  }

  #compareArraySpecs(ia: number, ib: number): Cause[] {
    const x = this.a.objects[ia] as ShapeDtypeStruct;
    const y = this.b.objects[ib] as ShapeDtypeStruct;
    const causes: Cause[] = [];
    if (!sameNumbers(x.shape, y.shape)) {
      const text = `shape ${change(shapeText(x.shape), shapeText(y.shape))}`;
      causes.push(valueCause("shape", [...x.shape], [...y.shape], text));
    }
    if (x.dtypeString !== y.dtypeString) {
      const text = `dtype ${change(x.dtypeString, y.dtypeString)}`;
      causes.push(valueCause("dtype", x.dtypeString, y.dtypeString, text));
    } else if (x.keyType && y.keyType && !sameNumbers(x.keyType.keyShape, y.keyType.keyShape)) {
      const [sa, sb] = [x.keyType.keyShape, y.keyType.keyShape];
      const text = `key shape ${change(shapeText(sa), shapeText(sb))}`;
      causes.push(valueCause("key_shape", [...sa], [...sb], text));
    }
    if (x.weakType !== y.weakType) {
      const text = `weak_type ${change(pyBool(x.weakType), pyBool(y.weakType))}`;
      causes.push(valueCause("weak_type", x.weakType, y.weakType, text));
    }
    causes.push(...this.shardings(this.a.references[ia], this.b.references[ib]));
    return causes;
  }

  #compareShardings(sa: number, sb: number): Cause[] {
    if (sa < 0 && sb < 0) return [];
    const x = sa < 0 ? null : (this.a.objects[sa] as SharedObject);
    const y = sb < 0 ? null : (this.b.objects[sb] as SharedObject);
    const ka = x && kindName(x);
    const kb = y && kindName(y);
    if (x === null || y === null || ka !== kb) {
      const details = x && y ? [fieldDetail("type", ka, kb, change(String(ka), String(kb)))] : [];
      return [entryCause("sharding", sa, sb, "sharding", details, ka, kb)];
    }
    const causes: Cause[] = [];
    const details = shardingDetails(x, y);
    if (details.length) causes.push(entryCause("sharding", sa, sb, "sharding", details, ka, kb));
    if (x instanceof NamedSharding) {
      const mesh = this.meshes(this.a.references[sa], this.b.references[sb]);
      if (mesh) causes.push(mesh);
    }
    return causes;
  }

  #compareMeshes(ma: number, mb: number): Cause | null {
    const x = this.a.objects[ma] as Mesh;
    const y = this.b.objects[mb] as Mesh;
    const details: DiffDetail[] = [];
    const names = (m: Mesh) => pyTuple(m.axisNames.map(pyStr));
    if (!sameStrings(x.axisNames, y.axisNames)) {
      const text = `axis names ${change(names(x), names(y))}`;
      details.push(fieldDetail("axis_names", [...x.axisNames], [...y.axisNames], text));
    }
    if (!sameNumbers(x.axisSizes, y.axisSizes)) {
      const text = `axis sizes ${change(shapeText(x.axisSizes), shapeText(y.axisSizes))}`;
      details.push(fieldDetail("axis_sizes", [...x.axisSizes], [...y.axisSizes], text));
    }
    if (!sameStrings(x.axisTypes, y.axisTypes)) {
      const text = `axis types ${change(pyTuple(x.axisTypes), pyTuple(y.axisTypes))}`;
      details.push(fieldDetail("axis_types", [...x.axisTypes], [...y.axisTypes], text));
    }
    const devices = devicesDetail("devices", x.devices, y.devices, x.axisSizes, y.axisSizes);
    if (devices) details.push(devices);
    if (details.length === 0) return null;
    const shape = (m: Mesh) => ({ axisNames: [...m.axisNames], axisSizes: [...m.axisSizes] });
    return entryCause("mesh", ma, mb, "mesh", details, shape(x), shape(y));
  }
}

/** What differs in two shardings of one type, besides a NamedSharding's mesh. */
function shardingDetails(x: SharedObject, y: SharedObject): DiffDetail[] {
  const details: DiffDetail[] = [];
  if (x instanceof NamedSharding && y instanceof NamedSharding) {
    const ea = specEntriesJson(x.spec.entries);
    const eb = specEntriesJson(y.spec.entries);
    if (JSON.stringify(ea) !== JSON.stringify(eb)) {
      const text = `PartitionSpec${change(specEntriesText(ea), specEntriesText(eb))}`;
      details.push(fieldDetail("spec", ea, eb, text));
    }
    for (const role of ["unreduced", "reduced"] as const) {
      const [ra, rb] = [x.spec[role], y.spec[role]];
      if (!sameStrings(ra, rb)) {
        const text = `${role} ${change(axisSetText(ra), axisSetText(rb))}`;
        details.push(fieldDetail(`spec.${role}`, [...ra], [...rb], text));
      }
    }
  } else if (x instanceof SingleDeviceSharding && y instanceof SingleDeviceSharding) {
    if (x.device.id !== y.device.id) {
      const text = `device ${change(String(x.device.id), String(y.device.id))}`;
      details.push(fieldDetail("device", x.device.id, y.device.id, text));
    }
  } else if (x instanceof GSPMDSharding && y instanceof GSPMDSharding) {
    details.push(...gspmdDetails(x, y));
  } else {
    // Entries of a newer minor version: their bytes.
    const [ba, bb] = [(x as { bytes: Uint8Array }).bytes, (y as { bytes: Uint8Array }).bytes];
    if (!sameNumbers(ba, bb)) {
      const text = `an entry of a newer minor version, ${change(thousands(ba.length), `${thousands(bb.length)} bytes`)}`;
      details.push(fieldDetail("entry", ba.length, bb.length, text));
    }
    return details;
  }
  const ma = (x as NamedSharding).memoryKind;
  const mb = (y as NamedSharding).memoryKind;
  if (ma !== mb) {
    const text = `memory kind ${change(memoryKindText(ma), memoryKindText(mb))}`;
    details.push(fieldDetail("memory_kind", ma, mb, text));
  }
  return details;
}

/** A GSPMD sharding's fields, in the order of its message. */
function gspmdDetails(x: GSPMDSharding, y: GSPMDSharding): DiffDetail[] {
  const details: DiffDetail[] = [];
  const devices = devicesDetail("devices", x.devices, y.devices);
  if (devices) details.push(devices);
  const [ha, hb] = [x.hloSharding, y.hloSharding];
  if (ha.type !== hb.type) {
    details.push(fieldDetail("hlo.type", ha.type, hb.type, `type ${change(ha.type, hb.type)}`));
  }
  if (!sameNumbers(ha.tileDims, hb.tileDims)) {
    const text = `tile dims ${change(shapeText(ha.tileDims), shapeText(hb.tileDims))}`;
    details.push(fieldDetail("hlo.tile_dims", [...ha.tileDims], [...hb.tileDims], text));
  }
  const tiles = deviceOrderDetail("hlo.tile_devices", { a: ha.tileDevices, b: hb.tileDevices });
  if (tiles) details.push({ ...tiles, text: `tile assignment: ${tiles.text}` });
  if (ha.replicateOnLastTileDim !== hb.replicateOnLastTileDim) {
    const [ra, rb] = [ha.replicateOnLastTileDim, hb.replicateOnLastTileDim];
    const text = `replicate_on_last_tile_dim ${change(pyBool(ra), pyBool(rb))}`;
    details.push(fieldDetail("hlo.replicate_on_last_tile_dim", ra, rb, text));
  }
  if (!sameStrings(ha.lastTileDims, hb.lastTileDims)) {
    const text = `last tile dims ${change(pyTuple(ha.lastTileDims), pyTuple(hb.lastTileDims))}`;
    details.push(
      fieldDetail("hlo.last_tile_dims", [...ha.lastTileDims], [...hb.lastTileDims], text),
    );
  }
  return details;
}

/** A cause naming an entry of each side: "sharding #2 to #5, PartitionSpec(...) to (...)". */
function entryCause(
  cause: "sharding" | "mesh" | "devices",
  ia: number,
  ib: number,
  noun: string,
  details: DiffDetail[],
  a: Json,
  b: Json,
): Cause {
  const head = `${noun} ${change(entryText(ia), entryText(ib))}`;
  return {
    key: `${cause}|${ia}|${ib}`,
    cause,
    text: [head, ...details.map((d) => d.text)].join(", "),
    entries: { a: ia < 0 ? null : ia, b: ib < 0 ? null : ib },
    a,
    b,
    details,
  };
}

function fieldDetail(field: string, a: Json, b: Json, text: string): DiffDetail {
  return { field, a, b, change: null, text };
}

/** An entry as the result names it: #2, or none. */
function entryText(index: number): string {
  return index < 0 ? "none" : `#${index}`;
}

/** A table object's kind, as the result names it. */
export function kindName(object: SharedObject): string {
  if (object instanceof ShapeDtypeStruct) return "ShapeDtypeStruct";
  if (object instanceof NamedSharding) return "NamedSharding";
  if (object instanceof SingleDeviceSharding) return "SingleDeviceSharding";
  if (object instanceof GSPMDSharding) return "GSPMDSharding";
  if (object instanceof Mesh) return "Mesh";
  return "bytes" in object ? "unknown" : "DeviceList";
}

/** A value leaf's kind (not a table object), as the result names it. */
function valueKindName(leaf: ValueLeaf): string {
  if (leaf instanceof DTypeValue) return "dtype";
  if (leaf instanceof PRNGImpl) return "PRNG impl";
  if (leaf instanceof FunctionRef) return "function";
  if (leaf instanceof PickledValue) return "pickle";
  if (leaf instanceof UnknownValueLeaf) return "unknown";
  return kindName(leaf);
}

/** A dtype as JAX prints it: float32, key<fry>. */
function dtypeText(value: DTypeValue): string {
  return new ShapeDtypeStruct([], value.dtype, null, { keyType: value.keyType }).dtypeString;
}

/** A PRNG impl and its key shape: threefry2x32 (2,). */
function prngText(impl: PRNGImpl): string {
  return `${impl.name} ${shapeText(impl.keyShape)}`;
}

/**
 * How two device lists differ in order (each laid out in a mesh's shape, if given), or
 * undefined when equal. Two lists read as one iota are equal without their ids written out
 * (a mesh of 4,096 devices is then a few numbers compared).
 */
function devicesDetail(
  field: string,
  x: DeviceList,
  y: DeviceList,
  shapeA?: readonly number[],
  shapeB?: readonly number[],
): DiffDetail | undefined {
  if (x === y || sameIota(x, y)) return undefined;
  return deviceOrderDetail(field, { a: deviceIdsOf(x), b: deviceIdsOf(y), shapeA, shapeB });
}

/** Whether two lists are both the same iota, not yet written out: then their ids are equal. */
function sameIota(x: DeviceList, y: DeviceList): boolean {
  const [ix, iy] = [pendingIota(x), pendingIota(y)];
  return (
    ix !== undefined &&
    iy !== undefined &&
    x.size === y.size &&
    ix.offset === iy.offset &&
    sameNumbers(ix.iota.reshapeDims, iy.iota.reshapeDims) &&
    sameNumbers(ix.iota.transposePerm, iy.iota.transposePerm)
  );
}

function pyBool(value: boolean): string {
  return value ? "True" : "False";
}

/** Whether two lists of numbers (or bytes) are equal, item by item. */
export function sameNumbers(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
