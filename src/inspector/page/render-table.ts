import type { PayloadView } from "../view";
import { count, h } from "./dom";

/** The table entries: kind, size, how many leaves use each, and what else refers to it. */
export function renderTable(view: PayloadView): HTMLElement {
  const rows = view.table.map((row) =>
    h(
      "tr",
      { "data-entry": row.index },
      h("td", { class: "n" }, String(row.index)),
      h("td", {}, row.kind),
      h("td", { class: "n" }, count(row.bytes)),
      h("td", { class: "n" }, count(row.leaves)),
      h(
        "td",
        {},
        [...(row.entries.length ? [`entries ${row.entries.join(", ")}`] : []), ...row.fields].join(
          "; ",
        ),
      ),
    ),
  );
  return h(
    "section",
    { id: "table" },
    h("h2", {}, `Table (${count(view.table.length)} entries)`),
    h(
      "table",
      {},
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "entry"),
          h("th", { scope: "col" }, "kind"),
          h("th", { scope: "col" }, "bytes"),
          h("th", { scope: "col" }, "leaves"),
          h("th", { scope: "col" }, "referred to by"),
        ),
      ),
      h("tbody", {}, ...rows),
    ),
  );
}
