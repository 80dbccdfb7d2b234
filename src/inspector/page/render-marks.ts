/** In a diff, the outline's marks: a row that differs, its groups, and the "changed only" filter. */
import type { DiffMark } from "../diff-marks";
import { count, h } from "./dom";

/** The "changed only" checkbox of a tree in a diff, with how many places differ; `toggled` redraws the outline. */
export function changedFilter(
  name: string,
  marked: number,
  toggled: (on: boolean) => void,
): HTMLElement {
  const box = h("input", { type: "checkbox", id: `changed-${name}`, class: "changed-only" });
  box.addEventListener("change", () => toggled(box.checked));
  return h("label", { class: "filter" }, box, ` changed only (${count(marked)})`);
}

/** A marked row's attributes: differs here, or somewhere below. */
export function marked(mark?: DiffMark): Record<string, string> {
  if (!mark) return {};
  return { "data-changed": mark.groups.length ? "here" : "below" };
}

/** Links to the groups found at a row, as the diff's summary numbers them. */
export function badges(mark?: DiffMark): HTMLElement[] {
  return (mark?.groups ?? []).map((g) =>
    h("a", { class: "badge", href: `#group-${g}`, "data-group": g }, `group ${g + 1}`),
  );
}
