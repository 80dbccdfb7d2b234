import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { DecodeError } from "../errors";
import { inspectorHtml } from "../inspector/html";
import { formatInspection, inspectPayload } from "../inspector/inspection";
import { inspectView, type PayloadView } from "../inspector/view";
import { UsageError } from "./errors";
import { readPayload, writeOutput } from "./files";

/**
 * The page script, bundled by `npm run build` (scripts/build-inspector.mjs) next to the
 * compiled inspector; run from the sources (as the tests do), the built one.
 */
function pageScript(): string {
  const beside = join(__dirname, "..", "inspector", "page.bundle.js");
  const built = join(__dirname, "..", "..", "dist", "src", "inspector", "page.bundle.js");
  const path = existsSync(beside) ? beside : built;
  try {
    return readFileSync(path, "utf8");
  } catch {
    throw new Error(`${path}: the inspector page's script is missing (npm run build makes it)`);
  }
}

/** A payload and the name the page shows it by. */
export interface PagePayload {
  bytes: Uint8Array;
  name: string;
}

/**
 * The self-contained inspector page, with a payload in it (with a second, their diff) or,
 * without one, file pickers.
 */
export function inspectorPage(payload?: PagePayload, other?: PagePayload): string {
  const payloads = [payload, other].filter((p): p is PagePayload => p !== undefined);
  return inspectorHtml(
    pageScript(),
    payloads.map((p) => ({
      base64: Buffer.from(p.bytes).toString("base64"),
      name: basename(p.name),
    })),
  );
}

/** What `inspect --json` prints: everything the page shows, as data. */
export function inspectionJson(bytes: Uint8Array): PayloadView {
  return inspectView(bytes).view;
}

/**
 * `inspect --html OUT` and `inspect --json`: writes the page or prints the view; a payload that
 * does not decode is still written or printed, then reported as the error it is.
 */
export function inspectOutputs(
  bytes: Uint8Array | undefined,
  name: string | undefined,
  options: { html?: string; json?: boolean },
): void {
  if (options.html) {
    writeOutput(
      options.html,
      Buffer.from(inspectorPage(bytes && name !== undefined ? { bytes, name } : undefined)),
    );
  }
  if (!bytes) return;
  const view = inspectionJson(bytes);
  if (options.json) console.log(JSON.stringify(view, null, 2));
  if (view.error)
    throw new DecodeError(
      view.error.path,
      view.error.code as DecodeError["code"],
      view.error.detail,
    );
}

/** Options of `colocated-wire inspect`. */
export interface InspectOptions {
  base64?: boolean;
  html?: string;
  json?: boolean;
}

/** `colocated-wire inspect [file] [other]`: the text report, the page, or the JSON view. */
export function inspectCommand(files: string[], options: InspectOptions): void {
  const command = "colocated-wire inspect";
  const [file, other] = files;
  // Only the page can go without a payload (it then lets the user pick one), or with two.
  if (file === undefined && !options.html) {
    throw new UsageError(
      "missing required argument 'file' (only --html may go without one)",
      command,
    );
  }
  if (files.length > 2)
    throw new UsageError("at most two payloads (the page compares two)", command);
  if (other !== undefined && (!options.html || options.json)) {
    throw new UsageError(
      "two payloads are for the page (--html, without --json); colocated-wire diff compares them as text",
      command,
    );
  }
  const bytes = file === undefined ? undefined : readPayload(file, options.base64);
  if (other !== undefined) {
    const page = { bytes: bytes as Uint8Array, name: file };
    comparePage(
      page,
      { bytes: readPayload(other, options.base64), name: other },
      options.html as string,
    );
  } else if (options.html || options.json) inspectOutputs(bytes, file, options);
  else console.log(formatInspection(inspectPayload(bytes as Uint8Array)));
}

/**
 * `inspect --html OUT A B`: the page that shows how two payloads differ. A payload that does
 * not decode is still written, then reported as the error it is, named by its file.
 */
function comparePage(a: PagePayload, b: PagePayload, html: string): void {
  writeOutput(html, Buffer.from(inspectorPage(a, b)));
  for (const { bytes, name } of [a, b]) {
    const { error } = inspectionJson(bytes);
    if (error) throw new Error(`${name}: ${error.path}: ${error.detail}`);
  }
}
