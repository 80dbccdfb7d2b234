import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
} from "../../src";
import { treeFlatten } from "../../src/model/tree-util";
import { callInputs } from "../../src/rpc";

/** A program and its inputs, as the group bench calls it. */
export interface GroupCall {
  program: Program;
  inputs: Float32Array[];
}

/**
 * The group bench's two calls on a job of `processes` × `devices` (the job's devices in
 * jax.devices() order, a mesh row per process: "x" crosses processes, "y" stays within one),
 * of the same size per member whatever the member count. Small: `summarize` on float32[4P, 4]
 * (float32[4P, D] past four devices a process; its `count_positive` is a reduction across
 * every process), 128 input bytes and five outputs a member. Array: `affine` on a float32[side, side] array sharded over every device.
 * With `declareOutputs`, the programs say what they return (as summarize and affine return it),
 * which fixed-answer members answer from; real workers ignore it.
 */
export function groupCalls(
  ids: readonly number[],
  devices: number,
  side: number,
  declareOutputs = false,
): { small: GroupCall; array: GroupCall } {
  const processes = ids.length / devices;
  const mesh = new Mesh(new DeviceList([...ids]), [processes, devices], ["x", "y"]);
  const spec = (shape: number[], dtype: "float32" | "int32" | "bool", ...axes: (string | null)[]) =>
    new ShapeDtypeStruct(shape, dtype, new NamedSharding(mesh, new PartitionSpec(...axes)));
  const program = (name: string, args: ShapeDtypeStruct[], outputs: unknown): Program => ({
    function: new FunctionRef("colocated_wire.examples", name),
    inputs: callInputs(args),
    ...(declareOutputs ? { outputs: treeFlatten<ShapeDtypeStruct>(outputs) } : {}),
    devices: mesh.devices,
  });
  const rows = 4 * processes;
  const cols = Math.max(4, devices); // "y" splits it
  const x = spec([rows, cols], "float32", "x", "y");
  const summarized = new Map<string, ShapeDtypeStruct>([
    ["doubled", x],
    ["sum", x],
    ["row_sums", spec([rows], "float32", "x")],
    ["positive", spec([rows, cols], "bool", "x", "y")],
    ["count_positive", spec([], "int32")],
  ]);
  const big = spec([side, side], "float32", "x", "y");
  const values = Float32Array.from({ length: rows * cols }, (_, i) => (i % 21) - 10);
  return {
    small: {
      program: program("summarize", [x, spec([rows, cols], "float32", "x")], summarized),
      inputs: [values, values],
    },
    array: {
      program: program("affine", [big, spec([], "float32"), spec([side], "float32", "y")], big),
      inputs: [
        Float32Array.from({ length: side * side }, (_, i) => i % 1000),
        Float32Array.of(2),
        new Float32Array(side),
      ],
    },
  };
}
