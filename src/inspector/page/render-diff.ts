import type { DiffPageView, ShardingChange } from "../diff-view";
import { count, h } from "./dom";
import { renderSharding } from "./render-grid";

/** The diff's summary line, then one line per group, as `colocated-wire diff` prints them. */
export function renderDiffSummary(view: DiffPageView): HTMLElement {
  const [summary, ...lines] = view.lines;
  const { diff } = view;
  const facts = diff && [
    `${diff.kind} payloads`,
    `${count(diff.bytes.a)} and ${count(diff.bytes.b)} bytes`,
    `${count(diff.leaves.a)} and ${count(diff.leaves.b)} leaves`,
  ];
  return h(
    "section",
    { id: "diff", "data-same": diff?.same, "data-equal": diff?.equal },
    h("h2", {}, `Diff: ${view.names[0]} → ${view.names[1]}`),
    h("p", { id: "diff-summary" }, summary ?? `${view.names.join(" and ")} cannot be compared`),
    facts ? h("p", { class: "status" }, facts.join(" · ")) : null,
    lines.length
      ? h(
          "ol",
          { id: "diff-groups" },
          ...lines.map((line, g) =>
            h(
              "li",
              { id: `group-${g}`, "data-cause": diff?.groups[g].cause },
              h("code", {}, line.trim()),
            ),
          ),
        )
      : null,
  );
}

/** Each changed sharding before and after, on its mesh, as the page draws every sharding. */
export function renderShardingChanges(view: DiffPageView): HTMLElement | null {
  if (view.changes.length === 0) return null;
  return h(
    "section",
    { id: "diff-shardings" },
    h("h2", {}, "Shardings before and after"),
    ...view.changes.map((change, i) => renderChange(view, change, i === 0)),
  );
}

function renderChange(view: DiffPageView, change: ShardingChange, open: boolean): HTMLElement {
  const side = (input: "a" | "b") => {
    const sharding = input === "a" ? change.before : change.after;
    const name = view.names[input === "a" ? 0 : 1];
    const title = `${input === "a" ? "before" : "after"}: ${name}`;
    return h(
      "div",
      { class: "side", "data-side": input },
      h("h4", {}, title),
      sharding
        ? renderSharding(sharding, open, {
            id: `change-${change.group}-${input}`,
            side: input,
          })
        : h("p", { class: "none", "data-sharding": "none" }, "no sharding"),
    );
  };
  return h(
    "figure",
    { class: "change", "data-group": change.group },
    h(
      "figcaption",
      {},
      h("a", { href: `#group-${change.group}` }, `group ${change.group + 1}`),
      `: ${change.text}`,
    ),
    h("div", { class: "before-after" }, side("a"), side("b")),
  );
}
