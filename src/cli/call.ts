import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { describeLeaf, leafPaths } from "../inspector/describe-leaf";
import { formatInspection, inspectPayload } from "../inspector/inspection";
import { DEFAULT_DEADLINE_MS, type ExecuteResult, WorkerClient } from "../rpc/client/client";
import { formatRange } from "../rpc/client/negotiate";
import { WorkerGroup } from "../rpc/group/worker-group";
import { UsageError } from "./errors";
import { checkFolder, readBytes, writeOutput } from "./files";

interface CallOptions {
  target?: string;
  worker: string[];
  input: string[];
  deadline: number;
  outDir?: string;
  minVersion?: number;
  maxVersion?: number;
}

/** `colocated-wire call`: runs a program payload on a worker and writes its outputs. */
export function callCommand(): Command {
  return new Command("call")
    .description(
      "run a ProgramPayload on a worker (or on every worker of a JAX job): print the output specs, write each output's raw data",
    )
    .argument("<program>", "a binary ProgramPayload")
    .option("-t, --target <host:port>", "the worker's address")
    .option(
      "-w, --worker <host:port>",
      "a worker of a JAX job of many processes, one per process (repeat it; instead of --target)",
      repeat,
      [] as string[],
    )
    .option(
      "-i, --input <file>",
      "one input leaf's raw little-endian data, in leaf order (repeat it)",
      repeat,
      [] as string[],
    )
    .option("--deadline <ms>", "deadline of each call, in ms", whole, DEFAULT_DEADLINE_MS)
    .option("--out-dir <dir>", "an existing folder to write output-<i>.bin to")
    .option("--min-version <n>", "oldest colocated.v1 minor version to accept", whole)
    .option("--max-version <n>", "newest colocated.v1 minor version to offer", whole)
    .action(async (file: string, options: CallOptions) => {
      if ((options.target === undefined) === (options.worker.length === 0)) {
        const line = "give either -t, --target <host:port> or -w, --worker <host:port> (repeated)";
        throw new UsageError(line, "colocated-wire call");
      }
      if (options.outDir !== undefined) checkFolder(options.outDir);
      const program = readBytes(file);
      const inputs = options.input.map(readBytes);
      const connect = {
        minVersion: options.minVersion,
        maxVersion: options.maxVersion,
        deadlineMs: options.deadline,
      };
      if (options.target === undefined) {
        const group = await WorkerGroup.connect(options.worker, connect);
        try {
          const result = await group.executeSharded(program, inputs);
          console.log(formatCall(group, result, options.outDir));
        } finally {
          group.close();
        }
        return;
      }
      const client = await WorkerClient.connect(options.target, connect);
      try {
        console.log(formatCall(client, await client.execute(program, inputs), options.outDir));
      } finally {
        client.close();
      }
    });
}

/** What a call returned (of one worker, or of a group), as the CLI prints it; writes each output's data under `outDir` if given. */
export function formatCall(
  source: WorkerClient | WorkerGroup,
  result: ExecuteResult,
  outDir?: string,
): string {
  const { outputs, data, outputSpecsPayload } = result;
  const paths = leafPaths(outputs.treedef.root);
  const lines = outputs.leaves.map((leaf, i) => {
    const line = `${String(i).padStart(5)}  ${paths[i]}  ${describeLeaf(leaf)}`;
    if (outDir === undefined) return line;
    const out = join(outDir, `output-${i}.bin`);
    writeOutput(out, data[i]);
    return `${line}  -> ${out}`;
  });
  return [
    source instanceof WorkerGroup
      ? `workers ${source.members.map((m) => m.target).join(", ")}: a JAX job of ${source.topology.processCount} processes, colocated.v1 version 1.${source.version}`
      : `worker ${source.target}: colocated.v1 version 1.${source.version} (it supports ${formatRange(source.serverRange)})`,
    "",
    formatInspection(inspectPayload(outputSpecsPayload)),
    "",
    `${outputs.leaves.length} outputs:`,
    ...lines,
  ].join("\n");
}

/** A repeatable option's values, in order. */
export function repeat(value: string, values: string[]): string[] {
  return [...values, value];
}

/** A whole number option. */
export function whole(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("not a whole number");
  return n;
}
