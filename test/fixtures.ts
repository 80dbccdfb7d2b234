import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  DeviceList,
  decodeSpecs,
  encodeSpecs,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  treeFlatten,
  type Writer,
} from "../src";

/** A Python writer (1.3) with every part it can name, as the vectors and seeds name it. */
export const PYTHON_WRITER: Writer = {
  library: "colocated-wire",
  version: "0.1.0",
  language: "python",
  python: "3.12",
  jax: "0.10.2",
  cloudpickle: "3.1.1",
};

/** Device ids 0..n-1. */
export function range(n: number, start = 0): number[] {
  return Array.from({ length: n }, (_, i) => start + i);
}

/** A 2x4 mesh of devices 0..7 with axes x and y. */
export function smallMesh(): Mesh {
  return new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
}

/**
 * Leaves of one shape and dtype on four NamedShardings of smallMesh(), for trees whose leaves
 * cycle through them (the leaf copies of 1.3).
 */
export function fourShardedLeaves(
  shape: number[],
  dtype: ShapeDtypeStruct["dtype"],
): ShapeDtypeStruct[] {
  const mesh = smallMesh();
  return [
    new PartitionSpec("x", "y"),
    new PartitionSpec("y", "x"),
    new PartitionSpec(null, "y"),
    new PartitionSpec(["x", "y"]),
  ].map((spec) => new ShapeDtypeStruct(shape, dtype, new NamedSharding(mesh, spec)));
}

/** Specs bytes for a list of leaves. */
export function specsBytes(leaves: ShapeDtypeStruct[]): Uint8Array {
  const { treedef } = treeFlatten(leaves);
  return encodeSpecs(treedef, leaves);
}

/** Encodes then decodes a list of leaves. */
export function roundTrip(leaves: ShapeDtypeStruct[]): ShapeDtypeStruct[] {
  return decodeSpecs(specsBytes(leaves)).leaves;
}

/** A valid payload message on a small mesh, for tests to break. */
export function validPayload(): SpecsPayload {
  const mesh = smallMesh();
  const leaf = new ShapeDtypeStruct(
    [4, 8],
    "float32",
    new NamedSharding(mesh, new PartitionSpec("x", "y")),
  );
  return SpecsPayload.decode(specsBytes([leaf, leaf]));
}

/** Bytes of a payload message. */
export function toBytes(message: SpecsPayload): Uint8Array {
  return SpecsPayload.encode(message).finish();
}
