import { Command } from "commander";
import { DiffInputError, diffPayloads } from "../diff/diff-payloads";
import { formatDiff } from "../diff/format-diff";
import { payloadFromJson } from "../json-form";
import { StatusError, UsageError } from "./errors";
import { readJson, readPayload } from "./files";

/** Options of `colocated-wire diff`. */
export interface DiffOptions {
  base64?: boolean;
  jsonForm?: boolean;
  json?: boolean;
}

/** diff(1)'s exit statuses: 0 the same, 1 different, 2 trouble. */
const DIFFER = 1;
const TROUBLE = 2;

/** `colocated-wire diff A B`: why two payloads differ, by cause and tree path. */
export function diffCommand(): Command {
  return new Command("diff")
    .description(
      "compare two payloads of one kind: what differs, grouped by cause, named by tree path " +
        "(exit status 0 same, 1 different, 2 trouble)",
    )
    .argument("<a>", "a payload")
    .argument("<b>", "another payload of the same kind")
    .option("--base64", "the files hold base64 text, as JAX's output-spec carrier does")
    .option("--json-form", "the files hold JSON forms, as decode prints them")
    .option("--json", "print the result as JSON (its fields: docs/diff.md)")
    .action(diffAction);
}

/** Prints the diff; trouble (a file, a payload, two kinds) is exit status 2, as for diff(1). */
function diffAction(a: string, b: string, options: DiffOptions): void {
  if (options.base64 && options.jsonForm) {
    throw new UsageError("--base64 and --json-form exclude each other", "colocated-wire diff");
  }
  let diff: ReturnType<typeof diffPayloads>;
  try {
    diff = diffPayloads(read(a, options), read(b, options));
  } catch (error) {
    const message =
      error instanceof DiffInputError
        ? `${error.input === "a" ? a : b}: ${error.cause.message}`
        : (error as Error).message;
    throw new StatusError(message, TROUBLE);
  }
  console.log(options.json ? JSON.stringify(diff, null, 2) : formatDiff(diff, [a, b]));
  // The differences are printed already: the status says the rest, with no line.
  if (!diff.same) throw new StatusError("", DIFFER);
}

function read(file: string, options: DiffOptions): Uint8Array {
  if (!options.jsonForm) return readPayload(file, options.base64);
  try {
    return payloadFromJson(readJson(file));
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(message.startsWith(`${file}: `) ? message : `${file}: ${message}`);
  }
}
