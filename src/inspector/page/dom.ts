type Child = Node | string | null | undefined | false;

/** An element with attributes and children: h("td", { class: "n" }, "12"). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) element.append(child);
  }
  return element;
}

/** Text safe inside HTML, for the grids, which are built as one string for speed. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** 1234567 as "1,234,567". */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A shard's colour: hues spread by the golden angle, so neighbours differ. */
export function shardColour(k: number): string {
  const hue = (k * 137.508) % 360;
  const light = 78 - (k % 3) * 10;
  return `hsl(${hue.toFixed(1)} 62% ${light}%)`;
}

/** `[0:8, 0:512]`, a shard's index ranges as numpy slices. */
export function rangesText(start: readonly number[], stop: readonly number[]): string {
  return `[${start.map((s, d) => `${s}:${stop[d]}`).join(", ")}]`;
}
