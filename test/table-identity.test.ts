import {
  DeviceList,
  EncodeError,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
} from "../src";
import { TableBuilder } from "../src/table/lower-table";
import { MAX_SHARED_SLOTS, tableSlot } from "../src/table/table-slots";

/**
 * The table builder finds a value it has met by the entry noted in the value's slot for that
 * table, shared by equal objects (no Map of every object): tables built in turn or interleaved
 * each get their own indices, and an object equal by value but new is still found by value.
 */

const mesh = new Mesh(new DeviceList([0, 1, 2, 3]), [2, 2], ["x", "y"]);
const sharding = new NamedSharding(mesh, new PartitionSpec("x"));
const leaf = (dtype: "float32" | "int8") => new ShapeDtypeStruct([4], dtype, sharding);

test("interleaved tables each find an object at the entry it has there", () => {
  const a = new TableBuilder();
  const b = new TableBuilder();
  const other = leaf("int8");
  const shared = leaf("float32");
  expect(b.add(other, "b")).toBe(3); // device list, mesh, sharding, then the leaf
  expect(a.add(shared, "a")).toBe(3);
  expect(b.add(shared, "b")).toBe(4);
  // The leaf last noted its entry in b: a finds it again by value, at its own index.
  expect(a.add(shared, "a")).toBe(3);
  expect(b.add(shared, "b")).toBe(4);
  expect(a.add(sharding, "a")).toBe(2);
  expect(a.entries).toHaveLength(4);
  expect(b.entries).toHaveLength(5);
});

test("an equal object made afresh is the same entry; the tables' entries are equal", () => {
  const a = new TableBuilder();
  const first = a.add(leaf("float32"), "a");
  expect(a.add(leaf("float32"), "a")).toBe(first);
  const b = new TableBuilder();
  b.add(leaf("float32"), "b");
  expect(b.entries).toEqual(a.entries);
});

test("equal objects made afresh share one slot; unequal ones do not", () => {
  const fresh = () =>
    new ShapeDtypeStruct([4], "float32", new NamedSharding(mesh, new PartitionSpec("x")));
  const slots = new Set(Array.from({ length: 100 }, () => tableSlot(fresh())));
  expect(slots.size).toBe(1);
  expect(tableSlot(leaf("int8"))).not.toBe(tableSlot(fresh()));
  // A sharding on another mesh of the same shape and devices is the same value.
  const again = new Mesh(new DeviceList([0, 1, 2, 3]), [2, 2], ["x", "y"]);
  const other = new Mesh(new DeviceList([3, 2, 1, 0]), [2, 2], ["x", "y"]);
  expect(tableSlot(new NamedSharding(again, new PartitionSpec("x")))).toBe(tableSlot(sharding));
  expect(tableSlot(new NamedSharding(other, new PartitionSpec("x")))).not.toBe(tableSlot(sharding));
});

test("a leaf per value made afresh for every leaf is lowered once per table", () => {
  const table = new TableBuilder();
  const fresh = (i: number) =>
    new ShapeDtypeStruct(
      [4],
      i % 2 ? "int8" : "float32",
      new NamedSharding(mesh, new PartitionSpec("x")),
    );
  const refs = Array.from({ length: 1_000 }, (_, i) => table.add(fresh(i), `leaves[${i}]`));
  expect(table.entries).toHaveLength(5); // device list, mesh, sharding, two array specs
  expect(new Set(refs)).toEqual(new Set([3, 4]));
});

test("after the shared slots are dropped, an equal value is still one entry", () => {
  const before = leaf("float32");
  const slot = tableSlot(before);
  // Enough distinct values to pass the bound: the shared slots are dropped on the way.
  for (let i = 0; i <= MAX_SHARED_SLOTS; i++) tableSlot(new ShapeDtypeStruct([i + 1], "int8"));
  const after = leaf("float32");
  expect(tableSlot(after)).not.toBe(slot);
  const table = new TableBuilder();
  expect(table.add(before, "a")).toBe(table.add(after, "b"));
  expect(table.entries).toHaveLength(4);
});

test("a value's entry lowered before is the same object on the same scope and target", () => {
  const a = new TableBuilder();
  a.add(leaf("float32"), "a");
  const b = new TableBuilder();
  b.add(leaf("float32"), "b");
  expect(b.entries[3]).toBe(a.entries[3]); // kept in the value's slot, settled
  expect(Object.isFrozen(b.entries[3])).toBe(true);
  // Another scope: its sharding lands at another index, so the leaf is lowered again.
  const c = new TableBuilder();
  c.add(new DeviceList([7]), "c");
  c.add(leaf("float32"), "c");
  const entry = c.entries[4].kind;
  expect(entry?.$case === "arraySpec" && entry.value.sharding).toBe(3);
  expect(c.entries[4]).not.toBe(a.entries[3]);
});

test("an entry kept for one target is not given to another: an older one still refuses", () => {
  const float0 = new ShapeDtypeStruct([4], "float0", sharding);
  new TableBuilder(3).add(float0, "new");
  expect(() => new TableBuilder(0).add(float0, "old")).toThrow(EncodeError);
  expect(() => new TableBuilder(0).add(float0, "old")).toThrow(
    "old.dtype: dtype float0 needs colocated.v1.1; the target is 1.0",
  );
  const again = new TableBuilder(3);
  again.add(float0, "new");
  expect(again.entries).toHaveLength(4);
});
