import { DecodeError, EncodeError } from "../errors";

/** Exit statuses of the command line, as docs/cli.md documents them. */
export const EXIT = { ok: 0, badInput: 1, usage: 2 } as const;

/** A mistake in how the command was called, not in its input: exit status 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose --help the hint names. */
    readonly command = "colocated-wire",
    /** Commander's own status: 0 once --help or --version has printed. */
    readonly exitCode: number = EXIT.usage,
  ) {
    super(message);
  }
}

/**
 * An error that names its own exit status, for a command whose statuses say more than ok or
 * bad input: `diff`'s 1 (the payloads differ: already printed, so no line) and 2 (trouble).
 */
export class StatusError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** A file the command could not read or write, worded as `<path>: <what is wrong>`. */
export function fileError(path: string, error: unknown, writing = false): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const what =
    writing && code === "ENOENT"
      ? "no such folder (it is not created for you)"
      : (FS_ERRORS[code ?? ""] ?? (error as Error).message);
  return new Error(`${path}: ${what}`);
}

const FS_ERRORS: Record<string, string> = {
  ENOENT: "no such file or folder",
  EISDIR: "is a folder, not a file",
  ENOTDIR: "a part of the path is not a folder",
  EACCES: "permission denied",
};

/** The one line an error prints (none after help or an empty message; DecodeError and EncodeError as they are) and the exit status. */
export function reportOf(error: unknown): { line: string; status: number } {
  if (error instanceof UsageError) {
    if (error.exitCode === 0) return { line: "", status: EXIT.ok };
    // With no command at all, commander has printed the whole help already.
    if (error.message === "(outputHelp)") return { line: "", status: EXIT.usage };
    return { line: `${error.message} (see ${error.command} --help)`, status: EXIT.usage };
  }
  if (error instanceof StatusError) return { line: oneLine(error.message), status: error.status };
  if (error instanceof DecodeError || error instanceof EncodeError) {
    return { line: error.message, status: EXIT.badInput };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { line: oneLine(message), status: EXIT.badInput };
}

function oneLine(message: string): string {
  return message.replace(/\s+/g, " ").trim();
}
