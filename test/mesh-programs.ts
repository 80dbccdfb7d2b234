import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
} from "../src";
import { callInputs } from "../src/rpc";
import { range } from "./fixtures";

/** The 2x4 mesh of 8 devices that the RPC tests' programs run on. */
export const mesh = new Mesh(new DeviceList(range(8)), [2, 4], ["x", "y"]);
/** A float32 [8, 4] over both axes of the mesh. */
export const MATRIX = new ShapeDtypeStruct(
  [8, 4],
  "float32",
  new NamedSharding(mesh, new PartitionSpec("x", "y")),
);
/** A float32 scalar, replicated over the mesh. */
export const SCALAR = new ShapeDtypeStruct(
  [],
  "float32",
  new NamedSharding(mesh, new PartitionSpec()),
);

/** A program of `module.qualname` by name on `args`, over the mesh's devices. */
export function program(module: string, qualname: string, args: ShapeDtypeStruct[]): Program {
  return {
    function: new FunctionRef(module, qualname),
    inputs: callInputs(args),
    devices: mesh.devices,
  };
}
