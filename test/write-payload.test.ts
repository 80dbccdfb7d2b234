import fc from "fast-check";
import { ProgramPayload, SpecsPayload, ValuePayload } from "../gen/ts/colocated/v1/payload";
import { EncodeError, lowerProgramPayload, lowerSpecsPayload, lowerValuePayload } from "../src";
import { isSettled } from "../src/settled";
import { writeProgramPayload, writeSpecsPayload, writeValuePayload } from "../src/write-payload";
import { build, buildValue, programModel, specsModel, valueModel } from "./property-models";

/**
 * The payload writers write what the generated encoder writes, whether a part is settled (its
 * kept bytes copied in) or not, at every target, with unknown fields in the envelope.
 */

const RUNS = { seed: 20_261_207, numRuns: 150 };

function lowers(lower: () => unknown): boolean {
  try {
    lower();
    return true;
  } catch (error) {
    if (error instanceof EncodeError) return false;
    throw error;
  }
}

test("the bytes are the generated encoder's, settled parts or not, at every target", () => {
  fc.assert(
    fc.property(specsModel, fc.integer({ min: 0, max: 3 }), (desc, target) => {
      const { specs } = build(desc);
      const lower = () =>
        lowerSpecsPayload(specs.treedef, specs.leaves, { targetMinorVersion: target });
      // A model with a construct the target lacks cannot be lowered for it.
      fc.pre(lowers(lower));
      for (let round = 0; round < 2; round++) {
        const message = lower();
        const generated = SpecsPayload.encode(message).finish();
        expect(writeSpecsPayload(message)).toEqual(generated);
        expect(writeSpecsPayload(structuredClone(message))).toEqual(generated);
      }
    }),
    RUNS,
  );
});

test("a program's bytes are the generated encoder's, lowered once or again", () => {
  fc.assert(
    fc.property(programModel, (desc) => {
      const { program } = build(desc);
      if (program === undefined) throw new Error("a program model builds a program");
      for (let round = 0; round < 2; round++) {
        const message = lowerProgramPayload(program);
        const generated = ProgramPayload.encode(message).finish();
        expect(writeProgramPayload(message)).toEqual(generated);
        expect(writeProgramPayload(structuredClone(message))).toEqual(generated);
      }
    }),
    RUNS,
  );
});

test("a value's bytes are the generated encoder's, lowered once or again", () => {
  fc.assert(
    fc.property(valueModel, (desc) => {
      const { treedef, leaves } = buildValue(desc);
      for (let round = 0; round < 2; round++) {
        const message = lowerValuePayload(treedef, leaves);
        const generated = ValuePayload.encode(message).finish();
        expect(writeValuePayload(message)).toEqual(generated);
      }
    }),
    RUNS,
  );
});

test("a lowered specs' entries and specs are settled, and written again from kept bytes", () => {
  const { specs } = build(fc.sample(specsModel, { seed: 7, numRuns: 1 })[0]);
  const first = lowerSpecsPayload(specs.treedef, specs.leaves);
  const again = lowerSpecsPayload(specs.treedef, specs.leaves);
  expect(again.specs).toBe(first.specs);
  expect(isSettled(first.specs as object)).toBe(true);
  first.table?.entries.forEach((entry, i) => {
    expect(again.table?.entries[i]).toBe(entry);
  });
  expect(writeSpecsPayload(again)).toEqual(writeSpecsPayload(first));
});

test("unknown fields of the envelope are written where the generated encoder puts them", () => {
  const { specs } = build(fc.sample(specsModel, { seed: 8, numRuns: 1 })[0]);
  const message = lowerSpecsPayload(specs.treedef, specs.leaves);
  const withFields = {
    ...message,
    _unknownFields: { [20 * 8 + 2]: [new Uint8Array([1, 9])] },
  };
  expect(writeSpecsPayload(withFields)).toEqual(SpecsPayload.encode(withFields).finish());
  const inTable = {
    ...message,
    table: { entries: message.table?.entries ?? [], _unknownFields: { 40: [new Uint8Array([2])] } },
  };
  expect(writeSpecsPayload(inTable)).toEqual(SpecsPayload.encode(inTable).finish());
});

/** Where in `root` an object or array is frozen (a model's own frozen parts included). */
function frozenParts(root: unknown): string[] {
  const seen = new Set<unknown>();
  const found: string[] = [];
  const walk = (value: unknown, path: string) => {
    if (typeof value !== "object" || value === null || ArrayBuffer.isView(value)) return;
    if (seen.has(value)) return;
    seen.add(value);
    if (Object.isFrozen(value) && Object.keys(value).length > 0) found.push(path);
    for (const [key, part] of Object.entries(value)) walk(part, `${path}.${key}`);
  };
  walk(root, "model");
  return found;
}

test("settling what is kept freezes nothing of the caller's model", () => {
  fc.assert(
    fc.property(specsModel, (desc) => {
      const { specs } = build(desc);
      const before = frozenParts(specs);
      lowerSpecsPayload(specs.treedef, specs.leaves);
      lowerSpecsPayload(specs.treedef, specs.leaves);
      expect(frozenParts(specs)).toEqual(before);
    }),
    RUNS,
  );
  fc.assert(
    fc.property(valueModel, (desc) => {
      const value = buildValue(desc);
      const before = frozenParts(value);
      lowerValuePayload(value.treedef, value.leaves);
      expect(frozenParts(value)).toEqual(before);
    }),
    RUNS,
  );
});
