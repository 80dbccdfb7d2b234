import { DeviceList } from "./model/device-list";
import { Mesh } from "./model/mesh";
import { PartitionSpec } from "./model/partition-spec";
import { FunctionRef, type Program } from "./model/program";
import { ShapeDtypeStruct } from "./model/shape-dtype-struct";
import { NamedSharding } from "./model/sharding";
import { treeFlatten, treeUnflatten } from "./model/tree-util";
import { callInputs } from "./rpc/sharded/call-inputs";

/** The shape of an example program: how many leaves, and the mesh they are sharded over. */
export interface ExampleOptions {
  leaves?: number;
  meshShape?: readonly [number, number];
}

/**
 * A realistic program: a transformer-like parameter tree of `leaves` (1024x512 float32) leaves
 * over a data x model mesh (128x8 = 1,024 devices by default), on a few distinct shardings.
 */
export function exampleProgram(options: ExampleOptions = {}): Program {
  const leafCount = options.leaves ?? 1000;
  const [data, model] = options.meshShape ?? [128, 8];
  const devices = new DeviceList(Array.from({ length: data * model }, (_, i) => i));
  const mesh = new Mesh(devices, [data, model], ["data", "model"]);
  const shardings = [
    new NamedSharding(mesh, new PartitionSpec("data", "model")),
    new NamedSharding(mesh, new PartitionSpec("model", null)),
    new NamedSharding(mesh, new PartitionSpec(null, "model")),
    new NamedSharding(mesh, new PartitionSpec()),
  ];
  const param = (i: number) => new ShapeDtypeStruct([1024, 512], "float32", shardings[i % 4]);
  const layers = [];
  for (let i = 0; i < leafCount; i += 4) {
    const layer: Record<string, ShapeDtypeStruct> = {};
    for (const [j, name] of ["attention", "mlp_in", "mlp_out", "norm"].entries()) {
      if (i + j < leafCount) layer[name] = param(i + j);
    }
    layers.push(layer);
  }
  const inputs = treeFlatten<ShapeDtypeStruct>({ layers });
  const outputs = treeFlatten<ShapeDtypeStruct>({
    loss: new ShapeDtypeStruct([], "float32", shardings[3]),
  });
  return {
    function: new FunctionRef("train", "step"),
    inputs,
    outputs,
    devices,
  };
}

/** The worker-side function of the runnable example, in the module the shipped worker allows. */
export const EXAMPLE_FUNCTION = new FunctionRef("colocated_wire.examples", "train_step");

/**
 * The example program as a worker runs it: `colocated_wire.examples.train_step(params)` on the
 * same parameter tree, its inputs flattened as the call's (args, kwargs).
 */
export function runnableExample(options: ExampleOptions = {}): Program {
  const { inputs, devices } = exampleProgram(options);
  const params = treeUnflatten(inputs.treedef, inputs.leaves);
  return { function: EXAMPLE_FUNCTION, inputs: callInputs([params]), devices };
}
