import { readFileSync, statSync, writeFileSync } from "node:fs";
import { fromBase64Text } from "./base64-text";
import { fileError, UsageError } from "./errors";

/** A file's bytes; a missing or unreadable file is `<path>: <what is wrong>`. */
export function readBytes(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw fileError(file, error);
  }
}

/** A payload file's bytes: binary, or base64 text with --base64. */
export function readPayload(file: string, base64 = false): Uint8Array {
  const data = readBytes(file);
  return base64 ? fromBase64Text(file, data.toString("latin1")) : data;
}

/** A JSON file's value. */
export function readJson(file: string): unknown {
  const text = readBytes(file).toString("utf8");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not JSON (${(error as Error).message})`);
  }
}

/**
 * Writes bytes to a file, or to standard output for `-`. The folder must exist: a typo in a
 * path should fail, not leave a new folder behind.
 */
export function writeOutput(file: string, bytes: Uint8Array): void {
  if (file === "-") {
    process.stdout.write(bytes);
    return;
  }
  try {
    writeFileSync(file, bytes);
  } catch (error) {
    throw fileError(file, error, true);
  }
}

/** Binary for standard output, unless it is a terminal, where it would garble the screen. */
export function writeBinaryToStdout(bytes: Uint8Array): void {
  if (process.stdout.isTTY) {
    throw new UsageError("refusing to write binary to a terminal: give -o FILE, or -o - to insist");
  }
  process.stdout.write(bytes);
}

/** Fails unless `dir` is an existing folder: checked before work whose output would be lost. */
export function checkFolder(dir: string): void {
  let isFolder = false;
  try {
    isFolder = statSync(dir).isDirectory();
  } catch {
    throw new Error(`${dir}: no such folder (it is not created for you)`);
  }
  if (!isFolder) throw new Error(`${dir}: not a folder`);
}
