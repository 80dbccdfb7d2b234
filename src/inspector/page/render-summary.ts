import { describeWriter } from "../../payload/writer";
import { describeKeyPool } from "../key-pool";
import { describeLeafCopies } from "../leaf-copies";
import type { SectionBytes } from "../sections";
import type { PayloadView } from "../view";
import { count, h } from "./dom";

const SECTION_NAMES: Record<keyof SectionBytes, string> = {
  header: "header",
  table: "table",
  tree: "tree",
  leaves: "leaf references",
  function: "function",
  other: "other",
};

/** The header facts, each tree's dict keys among them, as a definition list. */
export function renderHeader(view: PayloadView, name: string): HTMLElement {
  const { header } = view;
  const leaves = view.parts.reduce((n, part) => n + part.leaves.length, 0);
  const facts: [string, string, string][] = [
    ["file", "name", name],
    ["payload bytes", "bytes", count(view.payloadBytes)],
    [
      "schema version",
      "version",
      header ? `${header.majorVersion}.${header.minorVersion}` : "unreadable",
    ],
    ["payload kind", "kind", header?.kind ?? "unreadable"],
  ];
  if (header?.writer) facts.push(["written by", "writer", describeWriter(header.writer)]);
  if (!view.error) {
    facts.push(
      ["leaves", "leaves", count(leaves)],
      ["table entries", "entries", count(view.table.length)],
      ["distinct shardings", "shardings", count(view.shardings.length)],
    );
    if (view.devices !== null) facts.push(["program devices", "devices", count(view.devices)]);
    for (const part of view.parts)
      facts.push([`${part.name} keys`, `keys-${part.name}`, describeKeyPool(part.keys)]);
    for (const part of view.parts) {
      if (part.leafCopies) {
        const text = describeLeafCopies(part.leafCopies);
        facts.push([`${part.name} leaves`, `leaves-${part.name}`, text]);
      }
    }
  }
  return h(
    "dl",
    { class: "facts", id: "facts" },
    ...facts.flatMap(([term, field, value]) => [
      h("dt", {}, term),
      h("dd", { "data-field": field }, value),
    ]),
  );
}

/** The payload's bytes split by section, as one bar with a legend. */
export function renderBytesBar(view: PayloadView): HTMLElement {
  const { sections } = view;
  if (!sections) return h("p", { id: "bytes" }, "The bytes could not be split into sections.");
  const parts = (Object.keys(SECTION_NAMES) as (keyof SectionBytes)[]).filter(
    (key) => sections[key] > 0,
  );
  const total = view.payloadBytes || 1;
  const label = (key: keyof SectionBytes) =>
    `${SECTION_NAMES[key]}: ${count(sections[key])} bytes (${((100 * sections[key]) / total).toFixed(1)}%)`;
  return h(
    "figure",
    { id: "bytes" },
    h(
      "div",
      { class: "bar", role: "img", "aria-label": parts.map(label).join("; ") },
      ...parts.map((key) =>
        h("span", {
          class: `seg seg-${key}`,
          style: `flex-grow:${sections[key]}`,
          title: label(key),
          "data-section": key,
          "data-bytes": sections[key],
        }),
      ),
    ),
    h(
      "figcaption",
      {},
      ...parts.map((key) =>
        h("span", { class: "legend-item" }, h("i", { class: `seg-${key}` }), label(key)),
      ),
    ),
  );
}

/** Why the payload failed to decode: the DecodeError's code, path and detail. */
export function renderError(
  error: NonNullable<PayloadView["error"]>,
  title = "This payload does not decode",
): HTMLElement {
  return h(
    "section",
    { id: "error", role: "alert", "data-code": error.code, "data-path": error.path },
    h("h2", {}, title),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "code"),
      h("dd", { "data-field": "code" }, h("code", {}, error.code)),
      h("dt", {}, "path"),
      h("dd", { "data-field": "path" }, h("code", {}, error.path)),
      h("dt", {}, "detail"),
      h("dd", { "data-field": "detail" }, error.detail),
    ),
  );
}

/** A program's function: its name, or its pickle's size and the table entries it refers to. */
export function renderFunction(fn: NonNullable<PayloadView["function"]>): HTMLElement {
  let text: Node[];
  if (fn.kind === "name") text = [h("code", { "data-field": "function-name" }, fn.name)];
  else if (fn.kind === "pickled") {
    text = [
      h(
        "span",
        { "data-field": "pickle-bytes" },
        `a cloudpickle of ${count(fn.pickleBytes)} bytes`,
      ),
      document.createTextNode(
        fn.refs.length
          ? `, referring to table entries ${fn.refs.join(", ")}`
          : ", no table references",
      ),
    ];
  } else
    text = [document.createTextNode(`a function of a newer schema (${count(fn.bytes)} bytes)`)];
  return h("section", { id: "function" }, h("h2", {}, "Function"), h("p", {}, ...text));
}
