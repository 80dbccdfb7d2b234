/**
 * The inspector page's script (bundled by scripts/build-inspector.mjs): shows the payload
 * embedded in the page, or one the user picks or drops. It uses only the browser-safe core.
 */
import { base64Decode } from "@bufbuild/protobuf/wire";
import { inspectView } from "../view";
import { h } from "./dom";
import { renderShardings } from "./render-grid";
import { renderPart } from "./render-outline";
import { renderBytesBar, renderError, renderFunction, renderHeader } from "./render-summary";
import { renderTable } from "./render-table";

/** Draws a payload into #report; any failure is drawn too, never a blank page. */
function show(bytes: Uint8Array, name: string): void {
  const report = document.getElementById("report") as HTMLElement;
  document.documentElement.dataset.ready = "false";
  try {
    const { view, trees } = inspectView(bytes);
    const parts: (HTMLElement | null)[] = [
      renderHeader(view, name),
      renderBytesBar(view),
      view.error ? renderError(view.error) : null,
      view.function ? renderFunction(view.function) : null,
      view.error ? null : renderTable(view),
      ...trees.map((tree, i) => renderPart(view.parts[i], tree.root)),
      view.error ? null : renderShardings(view.shardings),
    ];
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
  document.title = `${name} · colocated-wire inspector`;
  // Ready once the browser has drawn it: the bench's time to first draw.
  requestAnimationFrame(() =>
    setTimeout(() => {
      document.documentElement.dataset.ready = "true";
      document.documentElement.dataset.drawnAt = String(performance.now());
    }),
  );
}

async function showFile(file: File): Promise<void> {
  show(new Uint8Array(await file.arrayBuffer()), file.name);
}

function start(): void {
  const picker = document.getElementById("picker") as HTMLInputElement;
  picker.addEventListener("change", () => {
    if (picker.files?.[0]) void showFile(picker.files[0]);
  });
  document.addEventListener("dragover", (event) => {
    event.preventDefault();
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", () => document.body.classList.remove("dropping"));
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    document.body.classList.remove("dropping");
    const file = event.dataTransfer?.files[0];
    if (file) void showFile(file);
  });
  const embedded = document.getElementById("payload");
  if (embedded) {
    show(base64Decode((embedded.textContent ?? "").trim()), embedded.dataset.name ?? "payload");
  } else {
    document.documentElement.dataset.ready = "true";
  }
}

start();
