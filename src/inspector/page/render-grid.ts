import type { ShardingView } from "../shardings";
import { count, escapeHtml, h, rangesText, shardColour } from "./dom";

/** Shardings drawn open at first (at most 4, and at most this many devices together); the others draw their grids when opened. */
const OPEN_FIRST = 4;
const OPEN_DEVICES = 4_096;
/** Shards listed in a legend at most. */
const LEGEND_MAX = 16;

/** Every distinct sharding, each a grid of its mesh's devices coloured by the shard they hold. */
export function renderShardings(
  shardings: readonly ShardingView[],
  title = "Shardings",
): HTMLElement {
  let devices = 0;
  return h(
    "section",
    { id: "shardings" },
    h("h2", {}, `${title} (${count(shardings.length)} distinct)`),
    shardings.length === 0 ? h("p", {}, "No leaf has a sharding.") : null,
    ...shardings.map((view, i) => {
      devices += view.devices.length;
      return renderSharding(view, i === 0 || (i < OPEN_FIRST && devices <= OPEN_DEVICES));
    }),
  );
}

/** Where a sharding is drawn. */
export interface ShardingPlace {
  /** Its element's id: a diff draws a sharding of each payload, whose entry numbers may meet. */
  id: string;
  /** In a diff, the payload it is of. */
  side?: "a" | "b";
}

/** One sharding, open or drawn when opened. */
export function renderSharding(
  view: ShardingView,
  open: boolean,
  place: ShardingPlace = { id: `sharding-${view.id}` },
): HTMLElement {
  const body = h("div", { class: "grids" });
  const details = h(
    "details",
    {
      class: "sharding",
      id: place.id,
      "data-side": place.side,
      "data-sharding": view.id,
      "data-devices": view.devices.length,
      "data-shards": view.shards.length,
      open,
    },
    h(
      "summary",
      {},
      h("strong", {}, `#${view.id}`),
      ` ${view.label} · ${count(view.leaves)} ${view.leaves === 1 ? "leaf" : "leaves"} · ${count(view.devices.length)} devices · `,
      view.problem ? "no device map" : `${count(view.shards.length)} distinct shards`,
    ),
    body,
  );
  let drawn = false;
  const draw = () => {
    if (drawn || !details.open) return;
    drawn = true;
    body.append(
      h(
        "p",
        { class: "example" },
        "Shards of ",
        h("code", {}, view.example.path),
        `, shape [${view.example.shape.join(", ")}]`,
      ),
    );
    if (view.problem) body.append(h("p", { class: "problem" }, view.problem));
    body.append(...grids(view), legend(view));
  };
  details.addEventListener("toggle", draw);
  if (open) draw();
  return details;
}

/**
 * The mesh as grids: the last two axes are rows and columns, any axes before them small
 * multiples; a one-axis mesh wraps into rows.
 */
function grids(view: ShardingView): HTMLElement[] {
  const { axisNames, axisSizes } = view.mesh;
  const rank = axisSizes.length;
  const n = view.devices.length;
  let rows: number;
  let cols: number;
  if (rank <= 1) {
    cols = Math.min(n, 64);
    rows = Math.ceil(n / Math.max(cols, 1));
  } else {
    rows = axisSizes[rank - 2];
    cols = axisSizes[rank - 1];
  }
  // A tall grid (128 × 8) reads better lying down: rows become columns, as a transpose.
  const transposed = rank >= 2 && rows > 2 * cols;
  const [drawRows, drawCols] = transposed ? [cols, rows] : [rows, cols];
  const perGrid = Math.max(rows * cols, 1);
  const multiples = Math.max(Math.ceil(n / perGrid), 1);
  const width = multiples > 1 ? 260 : 1000;
  const cell = Math.max(4, Math.min(28, Math.floor(width / drawCols) - 1));
  const out: HTMLElement[] = [];
  for (let m = 0; m < multiples; m++) {
    const lead = rank > 2 ? leadingCoords(m, axisSizes.slice(0, rank - 2)) : [];
    const caption = rank > 2 ? lead.map((c, i) => `${axisNames[i]}=${c}`).join(" ") : "";
    const cells: string[] = [];
    for (let q = 0; q < perGrid && m * perGrid + q < n; q++) {
      // q walks the drawn grid row by row; p is that cell's position in the mesh's own order.
      const p = transposed ? (q % drawCols) * cols + Math.floor(q / drawCols) : q;
      const at = m * perGrid + p;
      const device = view.devices[at];
      const k = view.shardOf[at];
      const coords =
        rank <= 1
          ? `${axisNames[0]}=${at}`
          : [...lead, Math.floor(p / cols), p % cols]
              .map((c, i) => `${axisNames[i]}=${c}`)
              .join(" ");
      const shard =
        k === undefined
          ? ""
          : `\nshard ${k}: ${rangesText(view.shards[k].start, view.shards[k].stop)}`;
      const style = k === undefined ? "" : ` style="background:${shardColour(k)}"`;
      cells.push(
        `<div class="cell" data-device="${device}"${k === undefined ? "" : ` data-shard="${k}"`}${style} title="${escapeHtml(`device ${device} (${coords})${shard}`)}">${cell >= 20 ? device : ""}</div>`,
      );
    }
    const [down, across] = transposed
      ? [axisNames[rank - 1], axisNames[rank - 2]]
      : [axisNames[rank - 2] ?? "", axisNames[rank - 1] ?? axisNames[0]];
    const grid = h("div", {
      class: "grid",
      style: `--cell:${cell}px;grid-template-columns:repeat(${drawCols},var(--cell))`,
      role: "img",
      "aria-label": `${caption}: ${drawRows} × ${drawCols} devices${rank >= 2 ? `, ${down} down, ${across} across` : ""}`,
    });
    grid.innerHTML = cells.join("");
    const axes = rank >= 2 ? `${down} ↓ ${across} →` : `${axisNames[0]} →`;
    out.push(
      h(
        "figure",
        { class: "mesh" },
        grid,
        h("figcaption", {}, caption ? `${caption}: ${axes}` : axes),
      ),
    );
  }
  return out;
}

function leadingCoords(m: number, sizes: readonly number[]): number[] {
  const coords = sizes.map(() => 0);
  for (let d = sizes.length - 1; d >= 0; d--) {
    coords[d] = m % sizes[d];
    m = Math.floor(m / sizes[d]);
  }
  return coords;
}

/** The first shards with their colour, index ranges and how many devices hold each. */
function legend(view: ShardingView): HTMLElement {
  const holders = new Array<number>(view.shards.length).fill(0);
  for (const k of view.shardOf) holders[k]++;
  const items = view.shards
    .slice(0, LEGEND_MAX)
    .map((shard, k) =>
      h(
        "li",
        {},
        h("i", { class: "swatch", style: `background:${shardColour(k)}` }),
        `shard ${k} ${rangesText(shard.start, shard.stop)} on ${count(holders[k])} ${holders[k] === 1 ? "device" : "devices"}`,
      ),
    );
  const rest = view.shards.length - items.length;
  return h(
    "ul",
    { class: "legend" },
    ...items,
    rest > 0 ? h("li", {}, `and ${count(rest)} more shards (hover a device)`) : null,
  );
}
