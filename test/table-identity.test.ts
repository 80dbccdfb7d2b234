import { DeviceList, Mesh, NamedSharding, PartitionSpec, ShapeDtypeStruct } from "../src";
import { TableBuilder } from "../src/table/lower-table";

/**
 * The table builder finds an object it has met by the entry the object noted on itself for
 * that table (no Map of every object): tables built in turn or interleaved each get their own
 * indices, and an object equal by value but new is still found by value.
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
