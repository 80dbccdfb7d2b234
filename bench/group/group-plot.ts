import { type Chart, escapeXml, lineChart, PANEL, type Series } from "../codec/plot";
import { formatMs } from "../common/format";
import type { GroupResults } from "./group";
import type { FixedRow } from "./group-fixed";
import type { RealRow } from "./group-real";
import { CPU_PER_MEMBER_US } from "./group-targets";

const SMALL = "#1f77b4";
const ARRAY = "#ff7f0e";
const FLOOR = "#7f7f7f";
const STREAMS = "#9467bd";
const TARGET = "#d62728";

type Row = RealRow | FixedRow;
const membersOf = (r: Row) => ("workers" in r ? r.workers : r.members);

/** The rows of the plot: real workers and fixed-answer members of two devices each. */
function rows(r: GroupResults): { real: Row[]; fixed: Row[] } {
  return {
    real: r.real.filter((row) => row.devicesPerWorker === 2),
    fixed: r.fixed.filter((row) => row.devicesPerMember === 2),
  };
}

function series(
  name: string,
  color: string,
  dashed: boolean,
  from: Row[],
  y: (r: Row) => number,
): Series {
  return {
    name,
    color,
    dashed,
    points: from.map((r): [number, number] => [membersOf(r), y(r)]).sort((a, b) => a[0] - b[0]),
  };
}

/**
 * The group bench's SVG, in the bench's style (bench/codec/plot.ts): time per call, and the
 * controller's CPU per member per call, against the member count, log-log; real workers solid,
 * fixed-answer members dashed (and, apart, their small call with a stream per member per call,
 * as before sessions), the bare HTTP/2 floor grey, the target red.
 */
export function groupPlotSvg(r: GroupResults): string {
  const { real, fixed } = rows(r);
  const perMember = (cost: "small" | "array") => (row: Row) => row[cost].cpuMs / membersOf(row);
  const charts: Chart[] = [
    {
      title: "Time per call",
      xLabel: "members",
      formatY: formatMs,
      series: [
        series("real, small", SMALL, false, real, (row) => row.small.p50Ms),
        series("real, array", ARRAY, false, real, (row) => row.array.p50Ms),
        series("fixed-answer, small", SMALL, true, fixed, (row) => row.small.p50Ms),
        series("fixed-answer, array", ARRAY, true, fixed, (row) => row.array.p50Ms),
      ],
    },
    {
      title: "Controller CPU per member per call",
      xLabel: "members",
      formatY: formatMs,
      series: [
        series("real, small", SMALL, false, real, perMember("small")),
        series("real, array", ARRAY, false, real, perMember("array")),
        series("fixed-answer, small", SMALL, true, fixed, perMember("small")),
        series("fixed-answer, array", ARRAY, true, fixed, perMember("array")),
        series("a stream per call, small", STREAMS, true, fixed, (row) =>
          "streams" in row ? row.streams.cpuMs / row.members : 0,
        ),
        series("bare HTTP/2, small", FLOOR, true, fixed, (row) =>
          "floor" in row ? row.floor.cpuMs / row.members : 0,
        ),
        {
          name: "target (small)",
          color: TARGET,
          points: [
            [16, CPU_PER_MEMBER_US / 1000],
            [1024, CPU_PER_MEMBER_US / 1000],
          ],
        },
      ],
    },
  ];
  const width = PANEL.width * 2;
  const height = PANEL.height;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml("colocated-wire group bench: time per call and controller CPU per member against the member count")}</title>`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...charts.map((chart, i) => lineChart(chart, i * PANEL.width, 0)),
    "</svg>",
    "",
  ].join("\n");
}
