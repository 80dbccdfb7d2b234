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

/** The self-contained inspector page, with a payload in it or, without one, a file picker. */
export function inspectorPage(payload?: { bytes: Uint8Array; name: string }): string {
  return inspectorHtml(
    pageScript(),
    payload && {
      base64: Buffer.from(payload.bytes).toString("base64"),
      name: basename(payload.name),
    },
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

/** `colocated-wire inspect [file]`: the text report, the page, or the JSON view. */
export function inspectCommand(file: string | undefined, options: InspectOptions): void {
  // Only the page can go without a payload: it then lets the user pick one.
  if (file === undefined && !options.html) {
    throw new UsageError(
      "missing required argument 'file' (only --html may go without one)",
      "colocated-wire inspect",
    );
  }
  const bytes = file === undefined ? undefined : readPayload(file, options.base64);
  if (options.html || options.json) inspectOutputs(bytes, file, options);
  else console.log(formatInspection(inspectPayload(bytes as Uint8Array)));
}
