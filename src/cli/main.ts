#!/usr/bin/env node
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { Command } from "commander";
import { canonicalizePayload } from "../canonicalize";
import { encodeProgram } from "../encode";
import { exampleProgram } from "../example";
import { payloadFromJson, payloadToJson } from "../json-form";
import { fromBase64Text, toBase64Text } from "./base64-text";
import { callCommand } from "./call";
import { formatInspection, inspectPayload } from "./inspect";

/** Builds the colocated-wire command line. */
export function buildCli(): Command {
  const program = new Command("colocated-wire")
    .description("Inspect, decode and encode colocated.v1 payloads of JAX colocated Python.")
    .showHelpAfterError();

  program
    .command("demo")
    .description(
      "encode the embedded example program (1,000 leaves on a 128x8 mesh) and inspect it",
    )
    .option("-o, --out <file>", "where to write the payload", "out/example.program.bin")
    .action((options: { out: string }) => {
      const bytes = encodeProgram(exampleProgram());
      write(options.out, bytes);
      console.log(`wrote ${options.out}\n`);
      console.log(formatInspection(inspectPayload(bytes)));
    });

  program
    .command("inspect")
    .description("print a payload's table, its size, and its size with every shared object inlined")
    .argument("<file>", "a binary payload")
    .option(...BASE64_IN)
    .action((file: string, options: Base64Option) =>
      console.log(formatInspection(inspectPayload(readPayload(file, options)))),
    );

  program
    .command("decode")
    .description("print a payload's JSON form (proto3 JSON, with unknown fields under @unknown)")
    .argument("<file>", "a binary payload")
    .option(...BASE64_IN)
    .action((file: string, options: Base64Option) =>
      console.log(JSON.stringify(payloadToJson(readPayload(file, options)), null, 2)),
    );

  program
    .command("encode")
    .description("write the binary payload of a JSON form")
    .argument("<file>", "a JSON form, as decode prints it")
    .option("-o, --out <file>", "where to write the payload (default: standard output)")
    .option("--base64", "write the payload as base64 text, as JAX's output-spec carrier holds it")
    .action((file: string, options: { out?: string } & Base64Option) => {
      const binary = payloadFromJson(readJson(file));
      const bytes = options.base64 ? toBase64Text(binary) : binary;
      if (options.out) write(options.out, bytes);
      else process.stdout.write(bytes);
    });

  program
    .command("canonicalize")
    .description(
      "validate, lift and lower payloads again: canonical bytes, as a peer would re-send them",
    )
    .argument("<files...>", "binary payloads")
    .requiredOption("-d, --out-dir <dir>", "where to write them, under the same names")
    .option("--base64", "read and write base64 text, as JAX's output-spec carrier holds it")
    .action((files: string[], options: { outDir: string } & Base64Option) => {
      for (const file of files) {
        const bytes = canonicalizePayload(readPayload(file, options));
        write(join(options.outDir, basename(file)), options.base64 ? toBase64Text(bytes) : bytes);
      }
    });

  program.addCommand(callCommand());

  return program;
}

interface Base64Option {
  base64?: boolean;
}

const BASE64_IN = [
  "--base64",
  "the file holds the payload as base64 text, as JAX's output-spec carrier does",
] as const;

/** A payload file's bytes: binary, or base64 text with --base64. */
function readPayload(file: string, options: Base64Option): Uint8Array {
  const data = readFileSync(file);
  return options.base64 ? fromBase64Text(file, data.toString("latin1")) : data;
}

function readJson(file: string): unknown {
  const text = readFileSync(file, "utf8");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not a JSON form (${(error as Error).message})`);
  }
}

function write(file: string, bytes: Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
}

if (require.main === module) {
  buildCli()
    .parseAsync()
    .catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      console.error(`colocated-wire: ${message.replace(/\s+/g, " ").slice(0, 500)}`);
      process.exitCode = 1;
    });
}
