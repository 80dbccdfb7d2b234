import { formatBytes, formatCount, formatMs } from "../common/format";
import type { CaseResult, SideId } from "./results";

/** One line of a chart. Dashed lines are decoding (or, for sizes, the shuffled order). */
export interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: [number, number][];
}

export interface Chart {
  title: string;
  xLabel: string;
  formatY: (y: number) => string;
  series: Series[];
}

const COLORS: Record<SideId, string> = {
  a: "#1f77b4",
  b: "#2ca02c",
  c: "#d62728",
  d1: "#9467bd",
  d2: "#8c564b",
};

/** Each chart's box; its legend sits in the right margin, clear of the lines. */
export const PANEL = { width: 610, height: 330, left: 70, right: 185, top: 34, bottom: 44 };

/** The SVG: size and time against device count (S3) and against leaf count (S4), log-log. */
export function plotSvg(cases: readonly CaseResult[]): string {
  const s3 = (order: string) =>
    cases.filter(
      (r) => r.case.scenario === "S3" && r.case.order === order && !r.case.freshShardings,
    );
  const s4 = cases.filter((r) => r.case.scenario === "S4");
  const devices = (r: CaseResult) => r.case.devices;
  const leaves = (r: CaseResult) => r.case.leafCount;
  const charts: Chart[] = [
    {
      title: "S3: payload size, 100 leaves",
      xLabel: "devices",
      formatY: formatBytes,
      series: [
        sizes("a", "(a)=(b) regular", s3("regular"), devices),
        sizes("a", "(a)=(b) shuffled", s3("shuffled"), devices, true),
        sizes("c", "(c) JAX regular", s3("regular"), devices),
        sizes("c", "(c) JAX shuffled", s3("shuffled"), devices, true),
        sizes("d1", "(d1) inlined protobuf", s3("regular"), devices),
        sizes("d2", "(d2) per-leaf pickle", s3("regular"), devices),
      ],
    },
    {
      title: "S3: time, 100 leaves, regular order",
      xLabel: "devices",
      formatY: formatMs,
      series: times(s3("regular"), devices),
    },
    {
      title: "S4: payload size, 128×8 mesh",
      xLabel: "leaves",
      formatY: formatBytes,
      series: [
        sizes("a", "(a)=(b)", s4, leaves),
        sizes("c", "(c) JAX", s4, leaves),
        sizes("d1", "(d1) inlined protobuf", s4, leaves),
        sizes("d2", "(d2) per-leaf pickle", s4, leaves),
      ],
    },
    {
      title: "S4: time, 128×8 mesh",
      xLabel: "leaves",
      formatY: formatMs,
      series: times(s4, leaves),
    },
  ];
  const width = PANEL.width * 2;
  const height = PANEL.height * 2;
  const panels = charts.map((chart, i) =>
    lineChart(chart, (i % 2) * PANEL.width, Math.floor(i / 2) * PANEL.height),
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    "<title>colocated-wire benchmark: payload size and time against device count (S3) and leaf count (S4)</title>",
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...panels,
    "</svg>",
    "",
  ].join("\n");
}

function sizes(
  side: SideId,
  name: string,
  rows: CaseResult[],
  x: (r: CaseResult) => number,
  dashed = false,
): Series {
  return {
    name,
    color: COLORS[side],
    dashed,
    points: points(rows, x, (r) => r.sides[side]?.bytes),
  };
}

/** Encode (solid) and decode (dashed) times of (a), (b) and (c). */
function times(rows: CaseResult[], x: (r: CaseResult) => number): Series[] {
  const names: [SideId, string, string][] = [
    ["a", "(a) TS encode", "(a) TS decode"],
    ["b", "(b) Python encode", "(b) Python decode"],
    ["c", "(c) JAX serialize", "(c) JAX deserialize"],
  ];
  return names.flatMap(([side, enc, dec]) => [
    {
      name: enc,
      color: COLORS[side],
      points: points(rows, x, (r) => r.sides[side]?.encode.medianMs),
    },
    {
      name: dec,
      color: COLORS[side],
      dashed: true,
      points: points(rows, x, (r) => r.sides[side]?.decode.medianMs),
    },
  ]);
}

function points(
  rows: CaseResult[],
  x: (r: CaseResult) => number,
  y: (r: CaseResult) => number | undefined,
): [number, number][] {
  return rows
    .flatMap((r): [number, number][] => {
      const v = y(r);
      return v === undefined || v <= 0 ? [] : [[x(r), v]];
    })
    .sort((p, q) => p[0] - q[0]);
}

/** One log-log chart with decade grid lines and a legend, its top-left corner at (x0, y0). */
export function lineChart(chart: Chart, x0: number, y0: number): string {
  const all = chart.series.flatMap((s) => s.points);
  if (!all.length) return "";
  const decades = (values: number[]) => [
    Math.floor(Math.log10(Math.min(...values))),
    Math.ceil(Math.log10(Math.max(...values))),
  ];
  const [xLo, xHi] = decades(all.map(([x]) => x));
  const [yLo, yHi] = decades(all.map(([, y]) => y));
  const plotW = PANEL.width - PANEL.left - PANEL.right;
  const plotH = PANEL.height - PANEL.top - PANEL.bottom;
  const left = x0 + PANEL.left;
  const top = y0 + PANEL.top;
  const sx = (x: number) => left + ((Math.log10(x) - xLo) / (xHi - xLo || 1)) * plotW;
  const sy = (y: number) => top + plotH - ((Math.log10(y) - yLo) / (yHi - yLo || 1)) * plotH;
  const out = [
    `<text x="${left + plotW / 2}" y="${y0 + 18}" text-anchor="middle" font-size="13" font-weight="bold">${escapeXml(chart.title)}</text>`,
    `<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  ];
  for (let d = xLo; d <= xHi; d++) {
    const x = sx(10 ** d).toFixed(1);
    out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${top + plotH}" stroke="#e5e5e5"/>`);
    out.push(
      `<text x="${x}" y="${top + plotH + 14}" text-anchor="middle">${formatCount(10 ** d)}</text>`,
    );
  }
  for (let d = yLo; d <= yHi; d++) {
    const y = sy(10 ** d).toFixed(1);
    out.push(`<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#e5e5e5"/>`);
    out.push(
      `<text x="${left - 4}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeXml(chart.formatY(10 ** d))}</text>`,
    );
  }
  out.push(
    `<text x="${left + plotW / 2}" y="${top + plotH + 32}" text-anchor="middle">${escapeXml(chart.xLabel)} (log scale)</text>`,
  );
  const drawn = chart.series.filter((s) => s.points.length);
  for (const s of drawn) {
    const path = s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
    const dash = s.dashed ? ` stroke-dasharray="5,3"` : "";
    out.push(
      `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="1.8"${dash}/>`,
    );
    for (const [x, y] of s.points) {
      out.push(
        `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.2" fill="${s.color}"/>`,
      );
    }
  }
  out.push(legend(drawn, left + plotW + 22, top));
  return out.join("\n");
}

function legend(series: Series[], x: number, y: number): string {
  const rowH = 14;
  const out = [
    `<rect x="${x}" y="${y}" width="150" height="${series.length * rowH + 6}" fill="white" fill-opacity="0.85" stroke="#ccc"/>`,
  ];
  series.forEach((s, i) => {
    const cy = y + 10 + i * rowH;
    const dash = s.dashed ? ` stroke-dasharray="5,3"` : "";
    out.push(
      `<line x1="${x + 5}" y1="${cy}" x2="${x + 27}" y2="${cy}" stroke="${s.color}" stroke-width="1.8"${dash}/>`,
    );
    out.push(
      `<text x="${x + 32}" y="${cy}" dominant-baseline="middle">${escapeXml(s.name)}</text>`,
    );
  });
  return out.join("\n");
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
