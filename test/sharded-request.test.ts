import { ExecuteShardedRequest } from "../gen/ts/colocated/v1/service";
import { chunkMessage, END_MESSAGE } from "../src/rpc/messages/sharded-request";
import { ShardLayout } from "../src/rpc/sharded/shard-layout";

// Chunk messages written field by field must be what the generated encoder writes.

const global = Uint8Array.from({ length: 8 * 300 * 4 }, (_, i) => (i * 7) % 251);

const cases = [
  { leaf: 0, index: { start: [0, 0], stop: [8, 300] }, offset: 0, length: 9600 },
  { leaf: 2, index: { start: [4, 100], stop: [8, 300] }, offset: 0, length: 128 },
  { leaf: 5, index: { start: [4, 100], stop: [8, 300] }, offset: 128, length: 3072 },
  { leaf: 1, index: { start: [0, 0], stop: [8, 300] }, offset: 9600, length: 0 },
];

test.each(cases)(
  "a chunk is the generated encoder's bytes: %o",
  ({ leaf, index, offset, length }) => {
    const layout = new ShardLayout([8, 300], index, 4);
    for (const named of [index, undefined]) {
      const chunk = {
        leaf,
        index: named && { start: named.start.map(BigInt), stop: named.stop.map(BigInt) },
        offset: BigInt(offset),
        data: layout.gather(global, offset, length),
        last: offset + length === layout.byteLength,
      };
      const want = ExecuteShardedRequest.encode({
        part: { $case: "chunk", value: chunk },
      }).finish();
      const bytes = chunkMessage(leaf, named, layout, global, offset, length);
      expect(Buffer.from(bytes)).toEqual(Buffer.from(want));
    }
  },
);

test("a scalar's index is present and empty", () => {
  const scalar = { start: [], stop: [] };
  const layout = new ShardLayout([], scalar, 4);
  const bytes = chunkMessage(0, scalar, layout, Uint8Array.of(1, 2, 3, 4), 0, 4);
  // The generated encoder writes empty packed lists too (0a 00 12 00); both read as empty.
  expect([...bytes]).toEqual([0x12, 0x0a, 0x12, 0x00, 0x22, 0x04, 1, 2, 3, 4, 0x28, 0x01]);
  const got = ExecuteShardedRequest.decode(bytes).part;
  expect(got?.$case === "chunk" && got.value.index).toMatchObject({ start: [], stop: [] });
});

test("end is the generated encoder's", () => {
  expect(END_MESSAGE).toEqual(
    ExecuteShardedRequest.encode({ part: { $case: "end", value: true } }).finish(),
  );
});

test.each([0, 1, 127, 128, 300, 2 ** 32 + 5, 2 ** 53 - 2])("an offset of %d", (value) => {
  // A one-byte-per-element shard of 2^53 - 1 bytes, and an empty chunk at `value`.
  const whole = { start: [0], stop: [2 ** 53 - 1] };
  const layout = new ShardLayout([2 ** 53 - 1], whole, 1);
  const want = ExecuteShardedRequest.encode({
    part: {
      $case: "chunk",
      value: { leaf: 0, offset: BigInt(value), data: new Uint8Array(), last: false },
    },
  }).finish();
  const bytes = chunkMessage(0, undefined, layout, new Uint8Array(0), value, 0);
  expect(Buffer.from(bytes)).toEqual(Buffer.from(want));
});
