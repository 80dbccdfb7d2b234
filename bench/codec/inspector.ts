import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { encodeSpecs } from "../../src";
import { inspectorPage } from "../../src/cli/inspect-page";
import { buildSpecs } from "../../test/support/build-specs";
import { allCases, type Case, deviceCount } from "../../test/support/scenarios";
import { reportDir, writeRawResults } from "../common/output";

/**
 * The inspector bench: time to first draw of `inspect --html`'s page for S1, S2 and
 * the real tree (S5), opened from disk in Chromium (Debian's, or CHROMIUM).
 */

const SCENARIOS = ["S1", "S2", "S5"];
/** Opens per case; the best is reported, so that a busy moment of a shared machine counts less. */
const RUNS = 3;

export interface InspectorRow {
  case: string;
  leaves: number;
  devices: number;
  shardings: number;
  payloadBytes: number;
  pageBytes: number;
  /** From navigation start to the page drawn (its `data-drawn-at`), best of RUNS. */
  firstDrawMs: number;
}

/** The cases the inspector bench runs: S1, S2 and S5 as --quick and --filter allow ("inspector" names all three). */
export function inspectorCases(quick: boolean, filter?: string): Case[] {
  const all = filter?.split(",").includes("inspector") ? allCases(quick) : allCases(quick, filter);
  return all.filter((c) => SCENARIOS.includes(c.id));
}

/** Writes each case's page to `outDir` and opens it in Chromium. */
export async function measureInspector(
  cases: readonly Case[],
  outDir: string,
  progress: (task: string) => void = () => {},
): Promise<InspectorRow[]> {
  mkdirSync(outDir, { recursive: true });
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const rows: InspectorRow[] = [];
    for (const c of cases) {
      progress(`inspector: ${c.id}`);
      const { treedef, leaves } = buildSpecs(c);
      const bytes = encodeSpecs(treedef, leaves);
      const html = inspectorPage({ bytes, name: `${c.id}.bin` });
      const file = path.join(outDir, `inspector-${c.id}.html`);
      writeFileSync(file, html);
      let best = Number.POSITIVE_INFINITY;
      for (let run = 0; run < RUNS; run++) {
        await page.goto(pathToFileURL(file).href);
        await page.waitForSelector('html[data-ready="true"]', { timeout: 120_000 });
        const drawnAt = Number(await page.getAttribute("html", "data-drawn-at"));
        best = Math.min(best, drawnAt);
      }
      const shardings = await page.$$eval("details.sharding", (all) => all.length);
      rows.push({
        case: c.id,
        leaves: leaves.length,
        devices: deviceCount(c),
        shardings,
        payloadBytes: bytes.length,
        pageBytes: Buffer.byteLength(html),
        firstDrawMs: best,
      });
    }
    return rows;
  } finally {
    await browser.close();
  }
}

/** The bench's table. */
export function inspectorMarkdown(rows: readonly InspectorRow[]): string {
  return [
    `### Inspector: time to first draw (best of ${RUNS}, Chromium, page opened from disk)`,
    "",
    "| case | leaves | devices | distinct shardings | payload bytes | page bytes | first draw ms |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.case} | ${r.leaves} | ${r.devices} | ${r.shardings} | ${r.payloadBytes} | ${r.pageBytes} | ${r.firstDrawMs.toFixed(0)} |`,
    ),
  ].join("\n");
}

/** Measures (the pages go to out/inspector-bench) and writes inspector.md to `outDir`/codec (the raw rows to out/bench/inspector.json). */
export async function runInspectorSection(
  root: string,
  cases: readonly Case[],
  outDir: string,
  progress?: (task: string) => void,
): Promise<InspectorRow[]> {
  const rows = await measureInspector(cases, path.join(root, "out", "inspector-bench"), progress);
  writeRawResults(root, "inspector", rows);
  writeFileSync(
    path.join(reportDir(outDir, "codec"), "inspector.md"),
    `# colocated-wire inspector bench\n\n${inspectorMarkdown(rows)}\n`,
  );
  return rows;
}
