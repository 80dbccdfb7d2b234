import fc from "fast-check";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { EncodeError, lowerSpecsPayload } from "../src";
import { isSettled } from "../src/settled";
import { writeSpecsPayload } from "../src/write-payload";
import { build, specsModel } from "./property-models";

/**
 * writeSpecsPayload writes what the generated encoder writes, whether a part is settled (its
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
