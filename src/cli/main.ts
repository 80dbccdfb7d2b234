#!/usr/bin/env node
import { basename, join } from "node:path";
import { Command } from "commander";
import { canonicalizePayload } from "../canonicalize";
import { payloadFromJson, payloadToJson } from "../json-form";
import { PACKAGE_VERSION } from "../package-version";
import { toBase64Text } from "./base64-text";
import { callCommand } from "./call";
import { demoCommand } from "./demo";
import { diffCommand } from "./diff";
import { reportOf, UsageError } from "./errors";
import { readJson, readPayload, writeBinaryToStdout, writeOutput } from "./files";
import { inspectCommand } from "./inspect-page";
import { topologyCommand } from "./topology";

/** Builds the colocated-wire command line. */
export function buildCli(): Command {
  const program = new Command("colocated-wire")
    .description("Inspect, decode and encode colocated.v1 payloads of JAX colocated Python.")
    .version(PACKAGE_VERSION, "-V, --version", "print the package's version");

  program.addCommand(demoCommand());

  program
    .command("inspect")
    .description(
      "print how each tree writes its dict keys, the payload's table, its size, and its size with every shared object inlined",
    )
    .argument(
      "[files...]",
      "a binary payload (optional with --html: the page then opens one); with --html, two: the page shows their diff",
    )
    .option(...BASE64_IN)
    .option("--html <out.html>", "write a self-contained page that draws the payload in a browser")
    .option(
      "--json",
      "print what that page shows (header, sections, table, trees' keys, leaves, shardings) as JSON",
    )
    .action(inspectCommand);

  program
    .command("decode")
    .description("print a payload's JSON form (proto3 JSON, with unknown fields under @unknown)")
    .argument("<file>", "a binary payload")
    .option(...BASE64_IN)
    .action((file: string, options: Base64Option) =>
      console.log(JSON.stringify(payloadToJson(readPayload(file, options.base64)), null, 2)),
    );

  program
    .command("encode")
    .description("write the binary payload of a JSON form")
    .argument("<file>", "a JSON form, as decode prints it")
    .option("-o, --out <file>", "where to write the payload; - for standard output")
    .option("--base64", "write the payload as base64 text, as JAX's output-spec carrier holds it")
    .action((file: string, options: { out?: string } & Base64Option) => {
      const binary = payloadFromJson(readJson(file));
      if (options.base64) writeOutput(options.out ?? "-", toBase64Text(binary));
      else if (options.out) writeOutput(options.out, binary);
      else writeBinaryToStdout(binary);
    });

  program
    .command("canonicalize")
    .description(
      "validate, lift and lower payloads again: canonical bytes, as a peer would re-send them",
    )
    .argument("<files...>", "binary payloads")
    .requiredOption(
      "-d, --out-dir <dir>",
      "an existing folder to write them to, under the same names",
    )
    .option("--base64", "read and write base64 text, as JAX's output-spec carrier holds it")
    .action((files: string[], options: { outDir: string } & Base64Option) => {
      for (const file of files) {
        const bytes = canonicalizePayload(readPayload(file, options.base64));
        const out = join(options.outDir, basename(file));
        writeOutput(out, options.base64 ? toBase64Text(bytes) : bytes);
      }
    });

  program.addCommand(callCommand());
  program.addCommand(topologyCommand());
  program.addCommand(diffCommand());

  // A usage mistake is one line and a hint, thrown to the one place that prints errors.
  for (const command of [program, ...program.commands]) {
    const name = command === program ? "colocated-wire" : `colocated-wire ${command.name()}`;
    command
      .exitOverride((error) => {
        throw new UsageError(error.message.replace(/^error: /, ""), name, error.exitCode);
      })
      .configureOutput({ outputError: () => {} });
  }
  return program;
}

interface Base64Option {
  base64?: boolean;
}

const BASE64_IN = [
  "--base64",
  "the file holds the payload as base64 text, as JAX's output-spec carrier does",
] as const;

/** Runs the command line: exit status 0, 1 for bad input, 2 for a usage mistake. */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildCli().parseAsync(argv);
    return 0;
  } catch (error) {
    const { line, status } = reportOf(error);
    if (line) console.error(`colocated-wire: ${line}`);
    return status;
  }
}

if (require.main === module) {
  main(process.argv).then((status) => {
    process.exitCode = status;
  });
}
