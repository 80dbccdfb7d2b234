import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { encodeProgram } from "../encode";
import { runnableExample } from "../example";
import { formatInspection, inspectPayload } from "../inspector/inspection";
import type { Program } from "../model/program";
import type { ShapeDtypeStruct } from "../model/shape-dtype-struct";
import { WorkerClient } from "../rpc/client/client";
import { arrayByteLength } from "../rpc/sharded/array-bytes";
import { formatCall, whole } from "./call";
import { checkFolder, writeOutput } from "./files";
import { defaultPython, startWorker } from "./worker-process";

interface DemoOptions {
  out?: string;
  leaves?: number;
  mesh?: [number, number];
  inputs?: string;
  run?: boolean;
  target?: string;
  python?: string;
}

/** `colocated-wire demo`: the example program, inspected, and with --run, run on a worker. */
export function demoCommand(): Command {
  return new Command("demo")
    .description(
      "encode the example program (colocated_wire.examples.train_step on 1,000 leaves, a 128x8 mesh) and inspect it; with --run, run it on a worker",
    )
    .option("-o, --out <file>", "also write the program payload there")
    .option("--leaves <n>", "parameter leaves (default 1000, or 8 with --run)", whole)
    .option("--mesh <DATAxMODEL>", "the mesh (default 128x8, or 2x4 with --run)", meshShape)
    .option("--inputs <dir>", "an existing folder to write input-<i>.bin to (data for call)")
    .option("--run", "start a worker, call the program, print its outputs, stop the worker")
    .option("-t, --target <host:port>", "with --run: use this worker instead of starting one")
    .option("--python <path>", "with --run: the Python to start the worker with")
    .action(async (options: DemoOptions) => {
      const program = runnableExample({
        leaves: options.leaves ?? (options.run ? 8 : 1000),
        meshShape: options.mesh ?? (options.run ? [2, 4] : [128, 8]),
      });
      const bytes = encodeProgram(program);
      if (options.out) writeOutput(options.out, bytes);
      const inputs = inputData(program);
      if (options.inputs) {
        const dir = options.inputs;
        checkFolder(dir);
        for (const [i, data] of inputs.entries()) writeOutput(join(dir, `input-${i}.bin`), data);
      }
      console.log(formatInspection(inspectPayload(bytes)));
      if (options.run) console.log(`\n${await run(program, inputs, options)}`);
    });
}

/** Starts a worker (unless given one), runs the program on it, and stops it again. */
async function run(program: Program, inputs: Uint8Array[], options: DemoOptions): Promise<string> {
  const python = options.python ?? defaultPython();
  const worker = options.target ? undefined : await startWorker(python, program.devices.size);
  try {
    const client = await WorkerClient.connect(options.target ?? worker?.target ?? "");
    try {
      const result = await client.execute(program, inputs);
      const loss = new Float32Array(result.data[0].slice().buffer)[0];
      return `${formatCall(client, result)}\nloss = ${loss}`;
    } finally {
      client.close();
    }
  } finally {
    await worker?.stop();
  }
}

/** Each input leaf as float32 data: every element of leaf i is (i + 1) / 8. */
function inputData(program: Program): Uint8Array[] {
  return (program.inputs.leaves as ShapeDtypeStruct[]).map((leaf, i) => {
    const values = new Float32Array((arrayByteLength(leaf) ?? 0) / 4).fill((i + 1) / 8);
    return new Uint8Array(values.buffer);
  });
}

function meshShape(value: string): [number, number] {
  const found = /^(\d+)x(\d+)$/.exec(value);
  if (!found) throw new InvalidArgumentError("not DATAxMODEL, e.g. 2x4");
  return [Number(found[1]), Number(found[2])];
}
