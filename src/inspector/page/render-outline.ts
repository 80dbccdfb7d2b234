import type { TreeNode } from "../../model/tree";
import { dictKeyText } from "../../model/tree-dict-keys";
import { type DiffMark, markedCount } from "../diff-marks";
import type { PartView } from "../view";
import { count, h } from "./dom";
import { badges, changedFilter, marked } from "./render-marks";

/** Children rendered at a time; more on request, so a 10,000-leaf list costs nothing until opened. */
const CHUNK = 200;
/** "Expand all" is offered up to this many leaves. */
export const EXPAND_ALL_MAX = 5_000;
/** Search results listed at most. */
const RESULTS_MAX = 100;

/** In a diff, a marked container opens at first when this few of its children are marked. */
const OPEN_MARKED = 8;
/** ... and while fewer rows than this are drawn, so a wide diff stays lazy. */
const OPEN_BUDGET = 500;

/** In a diff, the tree is A's, named `of`, marked where B differs (`mark` null: nowhere). */
export interface OutlineDiff {
  mark: DiffMark | null;
  of: string;
}

/**
 * A pytree as a collapsible outline (children drawn when opened), with a path search. In a
 * diff, the places that differ are marked, and a "changed only" filter draws those alone.
 */
export function renderPart(part: PartView, root: TreeNode, diff?: OutlineDiff): HTMLElement {
  const marks = diff?.mark;
  let changedOnly = false;
  let rows = 0;
  const counts = new WeakMap<TreeNode, number>();
  const leafCount = (node: TreeNode): number => {
    if (node.kind === "leaf") return 1;
    if (!("children" in node)) return 0;
    let n = counts.get(node);
    if (n === undefined) {
      n = node.children.reduce((sum, child) => sum + leafCount(child), 0);
      counts.set(node, n);
    }
    return n;
  };
  const leafRow = (label: string, i: number, mark?: DiffMark) => {
    const leaf = part.leaves[i];
    const sharding =
      leaf.sharding === null
        ? null
        : h(
            "a",
            { href: `#sharding-${leaf.sharding}`, "data-sharding": leaf.sharding },
            `sharding #${leaf.sharding}`,
          );
    // A value's leaf that is no array: its kind and what it is, and a sharding's grid.
    const described = "kind" in leaf;
    return h(
      "li",
      {
        class: mark ? "leaf changed" : "leaf",
        "data-path": leaf.path,
        "data-leaf": i,
        ...marked(mark),
      },
      h("span", { class: "key" }, label),
      " ",
      described
        ? h("code", { "data-field": "type", "data-kind": leaf.kind }, leaf.text)
        : h("code", { "data-field": "type" }, `${leaf.dtype}[${leaf.shape.join(",")}]`),
      " ",
      sharding ??
        (described ? null : h("span", { class: "none", "data-sharding": "none" }, "no sharding")),
      ...badges(mark),
    );
  };
  /** A node's row; a container's children are drawn the first time it opens. */
  const nodeRow = (
    node: TreeNode,
    label: string,
    first: number,
    open: boolean,
    mark?: DiffMark,
  ): HTMLElement => {
    rows++;
    if (node.kind === "leaf") return leafRow(label, first, mark);
    if (!("children" in node)) {
      return h(
        "li",
        { class: mark ? "empty changed" : "empty", ...marked(mark) },
        h("span", { class: "key" }, label),
        " None",
        ...badges(mark),
      );
    }
    const list = h("ul", { hidden: !open });
    const toggle = h(
      "button",
      { type: "button", class: "toggle", "aria-expanded": String(open) },
      h("span", { class: "key" }, label),
      ` ${kindText(node)} · ${plural(node.children.length, "child", "children")}, ${plural(leafCount(node), "leaf", "leaves")}`,
    );
    // The children drawn: all, or with "changed only" the marked ones; each with its first leaf.
    const shown = changedOnly ? [...(mark?.children?.keys() ?? [])].sort((x, y) => x - y) : null;
    const total = shown ? shown.length : node.children.length;
    let drawn = 0;
    let offset = first;
    let skipped = 0;
    const drawMore = () => {
      list.querySelector(":scope > li.more")?.remove();
      const end = Math.min(total, drawn + CHUNK);
      for (; drawn < end; drawn++) {
        const i = shown ? shown[drawn] : drawn;
        for (; skipped < i; skipped++) offset += leafCount(node.children[skipped]);
        const child = node.children[i];
        const childMark = mark?.children?.get(i);
        list.append(nodeRow(child, segment(node, i), offset, opensAtFirst(childMark), childMark));
        offset += leafCount(child);
        skipped = i + 1;
      }
      if (drawn < total) {
        const more = h(
          "button",
          { type: "button", class: "more" },
          `show ${count(Math.min(CHUNK, total - drawn))} more of ${count(total - drawn)}`,
        );
        more.addEventListener("click", drawMore);
        list.append(h("li", { class: "more" }, more));
      }
    };
    if (open) drawMore();
    toggle.addEventListener("click", () => {
      const opening = toggle.getAttribute("aria-expanded") !== "true";
      if (opening && drawn === 0) drawMore();
      toggle.setAttribute("aria-expanded", String(opening));
      list.hidden = !opening;
    });
    const row = h("li", { class: "node", ...marked(mark) }, toggle, list);
    if (mark?.groups.length) toggle.after(...badges(mark));
    return row;
  };
  /** A marked container opens at first when few of its children are marked, within budget. */
  const opensAtFirst = (mark?: DiffMark) =>
    !!mark?.children && mark.children.size <= OPEN_MARKED && rows < OPEN_BUDGET;
  const draw = () => {
    rows = 0;
    if (changedOnly && !marks)
      return h("ul", { class: "outline" }, h("li", {}, "Nothing differs in this tree."));
    return h("ul", { class: "outline" }, nodeRow(root, part.name, 0, true, marks ?? undefined));
  };

  let outline = draw();
  const total = part.leaves.length;
  const expandAll = h(
    "button",
    { type: "button", class: "expand-all", disabled: total > EXPAND_ALL_MAX },
    total > EXPAND_ALL_MAX
      ? `expand all (off above ${count(EXPAND_ALL_MAX)} leaves)`
      : "expand all",
  );
  expandAll.addEventListener("click", () => {
    // Level by level: each round opens what the round before drew.
    for (;;) {
      const closed = outline.querySelectorAll<HTMLButtonElement>(
        'button.toggle[aria-expanded="false"], li.more > button',
      );
      if (closed.length === 0) break;
      for (const button of closed) button.click();
    }
  });
  const filter = diff
    ? changedFilter(part.name, marks ? markedCount(marks) : 0, (on) => {
        changedOnly = on;
        const again = draw();
        outline.replaceWith(again);
        outline = again;
      })
    : null;
  const search = h("input", {
    type: "search",
    id: `search-${part.name}`,
    placeholder: "a path, such as ['params']",
    autocomplete: "off",
  });
  const status = h("p", { class: "status", "aria-live": "polite" });
  const results = h("ol", { class: "results" });
  search.addEventListener("input", () => {
    const query = search.value.trim().toLowerCase();
    results.replaceChildren();
    if (!query) {
      status.textContent = "";
      return;
    }
    let found = 0;
    part.leaves.forEach((leaf, i) => {
      if (!leaf.path.toLowerCase().includes(query)) return;
      if (found++ < RESULTS_MAX) results.append(leafRow(`${part.name}${leaf.path}`, i));
    });
    status.textContent = `${count(found)} of ${count(total)} leaves match${found > RESULTS_MAX ? `; the first ${RESULTS_MAX} are listed` : ""}`;
  });
  return h(
    "section",
    { class: "part", id: `part-${part.name}`, "data-part": part.name, "data-leaves": total },
    h(
      "h2",
      {},
      `Tree: ${part.name}${diff ? ` of ${diff.of}` : ""} (${plural(total, "leaf", "leaves")})`,
    ),
    h(
      "div",
      { class: "tools" },
      h("label", { for: `search-${part.name}` }, "Search paths "),
      search,
      " ",
      expandAll,
      filter,
    ),
    status,
    results,
    outline,
  );
}

function kindText(node: TreeNode): string {
  if (node.kind === "namedtuple" || node.kind === "custom") return `${node.kind} ${node.typeName}`;
  return node.kind;
}

/** A child's step in a path, as JAX's keystr writes it: ['key'], [0], .field. */
function segment(node: TreeNode, i: number): string {
  if ("keys" in node) {
    const key = node.keys[i];
    return `[${typeof key === "string" ? JSON.stringify(key) : dictKeyText(key)}]`;
  }
  if (node.kind === "namedtuple") return `.${node.fields[i]}`;
  return `[${i}]`;
}

function plural(n: number, one: string, many: string): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}
