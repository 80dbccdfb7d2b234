import fc from "fast-check";
import {
  DeviceList,
  decodeProgram,
  decodeSpecs,
  decodeValue,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  GSPMDSharding,
  Mesh,
  NamedSharding,
  PickledFunction,
  PickledValue,
  type Program,
  ShapeDtypeStruct,
  type SharedObject,
} from "../src";
import { ValueObject } from "../src/model/value-key";
import { build, buildValue, programModel, specsModel, valueModel } from "./property-models";

// Fixed seeds: the same few hundred models on every run.
const SPECS = { seed: 20_240_601, numRuns: 300 };
const PROGRAMS = { seed: 20_240_602, numRuns: 150 };
const VALUES = { seed: 20_240_605, numRuns: 150 };

/** Every shared object a decoded model reaches, by kind. */
function reachable(roots: readonly SharedObject[]): Map<string, SharedObject[]> {
  const found = new Map<string, SharedObject[]>();
  const visit = (o: SharedObject | null | undefined): void => {
    if (!o) return;
    const kind = o.constructor.name;
    found.set(kind, [...(found.get(kind) ?? []), o]);
    if (o instanceof ShapeDtypeStruct) visit(o.sharding);
    if (o instanceof NamedSharding) visit(o.mesh);
    if (o instanceof Mesh || o instanceof GSPMDSharding) visit(o.devices);
  };
  for (const root of roots) visit(root);
  return found;
}

/** One object per value: two objects are the same object exactly when they are equal. */
function expectSharing(roots: readonly SharedObject[]): void {
  for (const [kind, objects] of reachable(roots)) {
    for (const a of objects) {
      for (const b of objects) {
        if ((a === b) !== a.equals(b)) throw new Error(`${kind}: equal values, distinct objects`);
      }
    }
  }
}

function roots(program: Program): SharedObject[] {
  const fn = program.function;
  return [
    program.devices,
    ...(fn instanceof PickledFunction ? fn.refs : []),
    ...program.inputs.leaves,
    ...(program.outputs?.leaves ?? []),
  ];
}

describe("properties over random models", () => {
  test("specs: lift(lower(x)) equals x, with one object per value", () => {
    fc.assert(
      fc.property(specsModel, (desc) => {
        const { specs } = build(desc);
        const back = decodeSpecs(encodeSpecs(specs.treedef, specs.leaves));
        expect(back.treedef.equals(specs.treedef)).toBe(true);
        expect(back.leaves.every((leaf, i) => leaf.equals(specs.leaves[i]))).toBe(true);
        expectSharing(back.leaves);
      }),
      SPECS,
    );
  });

  test("specs: lower(lift(b)) is b for every canonical b", () => {
    fc.assert(
      fc.property(specsModel, (desc) => {
        const { specs } = build(desc);
        const bytes = encodeSpecs(specs.treedef, specs.leaves);
        const back = decodeSpecs(bytes);
        expect(encodeSpecs(back.treedef, back.leaves)).toEqual(bytes);
      }),
      SPECS,
    );
  });

  test("programs: both properties, and the function and devices come back", () => {
    fc.assert(
      fc.property(programModel, (desc) => {
        const program = build(desc).program as Program;
        const bytes = encodeProgram(program);
        const back = decodeProgram(bytes);
        expect(encodeProgram(back)).toEqual(bytes);
        expect(back.devices.equals(program.devices)).toBe(true);
        expect(back.inputs.treedef.equals(program.inputs.treedef)).toBe(true);
        if (program.outputs) {
          expect(back.outputs?.treedef.equals(program.outputs.treedef)).toBe(true);
        } else {
          expect(back.outputs).toBeUndefined();
        }
        const fn = program.function;
        if (fn instanceof PickledFunction) {
          const { pickle, refs } = back.function as PickledFunction;
          expect(pickle).toEqual(fn.pickle);
          expect(refs.every((r, i) => r.equals(fn.refs[i]))).toBe(true);
        } else {
          expect(back.function).toEqual(fn);
        }
        expectSharing(roots(back));
        expect(roots(back).some((o) => o instanceof DeviceList)).toBe(true);
      }),
      PROGRAMS,
    );
  });

  test("values: both properties, each leaf equal to its model's, one object per value", () => {
    fc.assert(
      fc.property(valueModel, (desc) => {
        const value = buildValue(desc);
        const bytes = encodeValue(value.treedef, value.leaves);
        const back = decodeValue(bytes);
        expect(encodeValue(back.treedef, back.leaves)).toEqual(bytes);
        expect(back.treedef.equals(value.treedef)).toBe(true);
        const shared: SharedObject[] = [];
        back.leaves.forEach((leaf, i) => {
          const was = value.leaves[i];
          if (was instanceof ValueObject) {
            expect(was.equals(leaf)).toBe(true);
            shared.push(leaf as SharedObject);
          } else if (was instanceof PickledValue) {
            const { pickle, refs } = leaf as PickledValue;
            expect(pickle).toEqual(was.pickle);
            expect(refs.every((r, j) => r.equals(was.refs[j]))).toBe(true);
            shared.push(...refs);
          } else {
            expect(leaf).toEqual(was);
          }
        });
        expectSharing(shared);
      }),
      VALUES,
    );
  });
});
