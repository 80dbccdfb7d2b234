import fc from "fast-check";
import { PartitionSpec, type PartitionSpecEntry, UNCONSTRAINED } from "../src";

/** A PartitionSpec's key, written by hand for speed, is the JSON it was defined as. */

const axis = fc.string({ maxLength: 4 });
const entry: fc.Arbitrary<PartitionSpecEntry> = fc.oneof(
  fc.constant(null),
  fc.constant(UNCONSTRAINED),
  axis,
  fc.array(axis, { maxLength: 3 }),
);

test("the key is the JSON of [entries, unreduced, reduced], UNCONSTRAINED as {u: 1}", () => {
  fc.assert(
    fc.property(
      fc.array(entry, { maxLength: 5 }),
      fc.array(axis, { maxLength: 3 }),
      fc.array(axis, { maxLength: 3 }),
      (entries, unreduced, reduced) => {
        const spec = PartitionSpec.create(entries, { unreduced, reduced });
        const json = spec.entries.map((e) => (e === UNCONSTRAINED ? { u: 1 } : e));
        expect(spec.key).toBe(`P(${JSON.stringify([json, spec.unreduced, spec.reduced])})`);
      },
    ),
    { seed: 20_261_203, numRuns: 300 },
  );
});
