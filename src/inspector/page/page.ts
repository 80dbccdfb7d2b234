/**
 * The inspector page's script (bundled by scripts/build-inspector.mjs): shows the payload
 * embedded in the page, or one the user picks or drops; given two, their diff. It uses only
 * the browser-safe core.
 */
import { base64Decode } from "@bufbuild/protobuf/wire";
import { diffView, type NamedBytes } from "../diff-view";
import { inspectView } from "../view";
import { h } from "./dom";
import { renderDiffSummary, renderShardingChanges } from "./render-diff";
import { renderShardings } from "./render-grid";
import { renderPart } from "./render-outline";
import { renderBytesBar, renderError, renderFunction, renderHeader } from "./render-summary";
import { renderTable } from "./render-table";

/** The payloads shown: A alone, or A against B. */
const shown: { a?: NamedBytes; b?: NamedBytes } = {};

/** Draws what `shown` holds into #report; any failure is drawn too, never a blank page. */
function show(): void {
  const { a, b } = shown;
  if (!a) return;
  const report = document.getElementById("report") as HTMLElement;
  document.documentElement.dataset.ready = "false";
  try {
    const parts = b ? diffParts(a, b) : payloadParts(a);
    report.replaceChildren(...parts.filter((part) => part !== null));
  } catch (error) {
    report.replaceChildren(
      h(
        "section",
        { id: "error", role: "alert", "data-code": "internal" },
        h("h2", {}, "The inspector failed on this payload"),
        h("pre", {}, String((error as Error)?.stack ?? error)),
      ),
    );
  }
  document.title = `${b ? `${a.name} → ${b.name}` : a.name} · colocated-wire inspector`;
  // Ready once the browser has drawn it: the bench's time to first draw.
  requestAnimationFrame(() =>
    setTimeout(() => {
      document.documentElement.dataset.ready = "true";
      document.documentElement.dataset.drawnAt = String(performance.now());
    }),
  );
}

/** One payload: its header, bytes, table, trees and shardings. */
function payloadParts({ bytes, name }: NamedBytes): (HTMLElement | null)[] {
  const { view, trees } = inspectView(bytes);
  return [
    renderHeader(view, name),
    renderBytesBar(view),
    view.error ? renderError(view.error) : null,
    view.function ? renderFunction(view.function) : null,
    view.error ? null : renderTable(view),
    ...trees.map((tree, i) => renderPart(view.parts[i], tree.root)),
    view.error ? null : renderShardings(view.shardings),
  ];
}

/** Two payloads: the diff's lines, each changed sharding before and after, A's trees marked. */
function diffParts(a: NamedBytes, b: NamedBytes): (HTMLElement | null)[] {
  const view = diffView(a, b);
  if (view.error) {
    const name = view.names[view.error.input === "a" ? 0 : 1];
    return [renderDiffSummary(view), renderError(view.error, `${name} cannot be compared`)];
  }
  const { trees, view: inspected } = view.a;
  const of = view.names[0];
  return [
    renderDiffSummary(view),
    renderShardingChanges(view),
    ...trees.map((tree, i) =>
      renderPart(inspected.parts[i], tree.root, { mark: view.marks.get(tree.name) ?? null, of }),
    ),
    // The shardings A's leaves link to.
    renderShardings(inspected.shardings, `Shardings of ${of}`),
  ];
}

async function named(file: File): Promise<NamedBytes> {
  return { bytes: new Uint8Array(await file.arrayBuffer()), name: file.name };
}

/** Opens files: one replaces A (and shows it alone), two are A and B. */
async function open(files: readonly File[]): Promise<void> {
  if (files.length === 0) return;
  shown.a = await named(files[0]);
  shown.b = files[1] ? await named(files[1]) : undefined;
  show();
}

function embedded(id: string): NamedBytes | undefined {
  const element = document.getElementById(id);
  if (!element) return undefined;
  const bytes = base64Decode((element.textContent ?? "").trim());
  return { bytes, name: element.dataset.name ?? "payload" };
}

function start(): void {
  const picker = document.getElementById("picker") as HTMLInputElement;
  picker.addEventListener("change", () => void open([...(picker.files ?? [])]));
  // The second picker compares a payload with the one shown (or, with none, shows it).
  const other = document.getElementById("picker-b") as HTMLInputElement;
  other.addEventListener("change", async () => {
    const file = other.files?.[0];
    if (!file) return;
    if (shown.a) shown.b = await named(file);
    else shown.a = await named(file);
    show();
  });
  document.addEventListener("dragover", (event) => {
    event.preventDefault();
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", () => document.body.classList.remove("dropping"));
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    document.body.classList.remove("dropping");
    void open([...(event.dataTransfer?.files ?? [])]);
  });
  shown.a = embedded("payload");
  shown.b = embedded("payload-b");
  if (shown.a) show();
  else document.documentElement.dataset.ready = "true";
}

start();
