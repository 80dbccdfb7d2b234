import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeSpecs, NamedSharding, PartitionSpec, ShapeDtypeStruct, treeFlatten } from "../src";
import { inspectorPage } from "../src/cli/inspect-page";
import { diffPayloads } from "../src/diff/diff-payloads";
import { formatDiff } from "../src/diff/format-diff";
import { chromiumPage } from "./chromium-page";
import { smallMesh } from "./fixtures";
import { buildSpecs } from "./support/build-specs";
import { s2Cases } from "./support/scenarios";

// The inspector page given two payloads, in a real browser (Debian's Chromium, driven by
// playwright-core, as test/inspector.test.ts): the diff's lines, A's tree with what differs
// marked and a "changed only" filter, and each changed sharding drawn before and after.
// The page script comes from the build (npm test builds first).

const ROOT = join(__dirname, "..");
const CLI = join(ROOT, "dist", "src", "cli", "main.js");
const OUT = join(ROOT, "out", "inspector-diff");

/** Three layers of a weight and a bias, and a head; `w1` is layer 1's weight spec. */
function model(w1: PartitionSpec): Uint8Array {
  const mesh = smallMesh();
  const on = (spec: PartitionSpec) => new NamedSharding(mesh, spec);
  const xy = on(new PartitionSpec("x", "y"));
  const layer = (w: NamedSharding) => ({
    w: new ShapeDtypeStruct([8, 8], "float32", w),
    b: new ShapeDtypeStruct([8], "float32", on(new PartitionSpec())),
  });
  const tree = {
    layers: [layer(xy), layer(on(w1)), layer(xy)],
    head: new ShapeDtypeStruct([8, 4], "float32", xy),
  };
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return encodeSpecs(treedef, leaves);
}

const A = model(new PartitionSpec("x", "y"));
const B = model(new PartitionSpec("y", "x"));
const CHANGED = '["layers"][1]["w"]';

jest.setTimeout(30_000);

const chrome = chromiumPage(OUT);

async function goto(file: string): Promise<void> {
  await chrome.page.goto(`file://${file}`);
  await chrome.page.waitForSelector('html[data-ready="true"]', { timeout: 10_000 });
}

/** The paths of the leaf rows the outline draws, and those marked as differing. */
function leafRows(): Promise<{ paths: string[]; changed: string[] }> {
  return chrome.page.$$eval("section.part .outline li.leaf", (rows) => ({
    paths: rows.map((li) => li.getAttribute("data-path") as string),
    changed: rows
      .filter((li) => li.getAttribute("data-changed") === "here")
      .map((li) => li.getAttribute("data-path") as string),
  }));
}

/** Each drawn device of a side of a change, with the index ranges of the shard it holds. */
function cells(group: number, side: "a" | "b"): Promise<[string, string][]> {
  return chrome.page.$$eval(
    `#diff-shardings figure.change[data-group="${group}"] details.sharding[data-side="${side}"] .cell`,
    (all) =>
      all.map((cell) => [
        cell.getAttribute("data-device") as string,
        (cell.getAttribute("title") as string).replace(/^[^\n]*\nshard \d+: /, ""),
      ]),
  );
}

describe("the inspector page, given two payloads, shows their diff in Chromium", () => {
  test("the summary, the changed path marked, the filter, the sharding before and after", async () => {
    const file = join(OUT, "one-sharding.html");
    writeFileSync(file, inspectorPage({ bytes: A, name: "a.bin" }, { bytes: B, name: "b.bin" }));
    await goto(file);

    // The lines `colocated-wire diff` prints.
    const lines = formatDiff(diffPayloads(A, B), ["a.bin", "b.bin"]).split("\n");
    expect(lines[0]).toBe("a.bin and b.bin differ: 1 leaf in 1 group");
    expect(await chrome.page.textContent("#diff-summary")).toBe(lines[0]);
    expect(
      await chrome.page.$$eval("#diff-groups li", (all) => all.map((li) => li.textContent)),
    ).toEqual(lines.slice(1).map((line) => line.trim()));
    expect(await chrome.page.getAttribute("#group-0", "data-cause")).toBe("sharding");

    // The changed leaf is marked, with a link to its group; the way to it opened at first.
    expect(await leafRows()).toEqual({
      paths: ['["head"]', '["layers"][1]["b"]', CHANGED],
      changed: [CHANGED],
    });
    expect(
      await chrome.page.$eval(`li.leaf[data-path='${CHANGED}'] a.badge`, (a) =>
        a.getAttribute("href"),
      ),
    ).toBe("#group-0");

    // All of A's tree, then "changed only": the unchanged leaves are gone.
    await chrome.page.click("section.part button.expand-all");
    expect((await leafRows()).paths).toHaveLength(7);
    await chrome.page.check("#changed-specs");
    expect(await leafRows()).toEqual({ paths: [CHANGED], changed: [CHANGED] });
    await chrome.page.uncheck("#changed-specs");
    expect((await leafRows()).changed).toEqual([CHANGED]);

    // The sharding drawn on its 2x4 mesh before (x, y) and after (y, x): every device, each
    // holding another shard of the [8, 8] leaf.
    const before = await cells(0, "a");
    const after = await cells(0, "b");
    expect(before.map(([device]) => device)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    expect(after.map(([device]) => device)).toEqual(before.map(([device]) => device));
    expect(before.slice(0, 2)).toEqual([
      ["0", "[0:4, 0:2]"],
      ["1", "[0:4, 2:4]"],
    ]);
    expect(after.slice(0, 2)).toEqual([
      ["0", "[0:2, 0:4]"],
      ["1", "[2:4, 0:4]"],
    ]);
    expect(
      await chrome.page.$$eval("#diff-shardings .example code", (all) =>
        all.map((c) => c.textContent),
      ),
    ).toEqual([`specs${CHANGED}`, `specs${CHANGED}`]);
    await chrome.page.screenshot({ path: join(OUT, "one-sharding.png"), fullPage: true });
  });

  test("inspect --html OUT A B writes it; the second picker compares with the payload shown", async () => {
    const a = join(OUT, "a.bin");
    const b = join(OUT, "b.bin");
    writeFileSync(a, A);
    writeFileSync(b, B);
    const html = join(OUT, "cli.html");
    execFileSync("node", [CLI, "inspect", "--html", html, a, b]);
    await goto(html);
    expect(await chrome.page.textContent("#diff-summary")).toBe(
      "a.bin and b.bin differ: 1 leaf in 1 group",
    );

    // The page with one payload, then another from the second picker.
    execFileSync("node", [CLI, "inspect", "--html", html, a]);
    await goto(html);
    expect(await chrome.page.$("#diff")).toBeNull();
    await chrome.page.setInputFiles("#picker-b", b);
    await chrome.page.waitForSelector("#diff-summary");
    await chrome.page.waitForSelector('html[data-ready="true"]');
    expect(await chrome.page.textContent("#diff-summary")).toBe(
      "a.bin and b.bin differ: 1 leaf in 1 group",
    );

    // The same payload twice; two payloads of which one does not decode.
    execFileSync("node", [CLI, "inspect", "--html", html, a, a]);
    await goto(html);
    expect(await chrome.page.textContent("#diff-summary")).toMatch(
      /^a\.bin and a\.bin are the same/,
    );
    expect(await chrome.page.$("#diff-shardings")).toBeNull();
    const bad = join(OUT, "bad.bin");
    writeFileSync(bad, readFileSync(b).subarray(0, 20));
    const failed = spawnSync("node", [CLI, "inspect", "--html", html, a, bad], {
      encoding: "utf8",
    });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/^colocated-wire: .*bad\.bin: /);
    await goto(html);
    expect(await chrome.page.getAttribute("#error", "data-code")).toBeTruthy();
    expect(await chrome.page.textContent("#error h2")).toBe("bad.bin cannot be compared");
  });

  test("10,000 leaves on 4,096 devices, one changed: drawn lazily, found with the filter", async () => {
    const { treedef, leaves } = buildSpecs(s2Cases()[0]);
    const changed = [...leaves];
    const leaf = changed[5000];
    changed[5000] = new ShapeDtypeStruct([512, 512], leaf.dtype, leaf.sharding);
    const file = join(OUT, "S2.html");
    const a = { bytes: encodeSpecs(treedef, leaves), name: "S2.bin" };
    writeFileSync(
      file,
      inspectorPage(a, { bytes: encodeSpecs(treedef, changed), name: "S2b.bin" }),
    );
    await goto(file);
    expect(await chrome.page.textContent("#diff-summary")).toBe(
      "S2.bin and S2b.bin differ: 1 leaf in 1 group",
    );
    expect(
      await chrome.page.$$eval("#diff-groups li", (all) => all.map((li) => li.textContent)),
    ).toEqual(["1 leaf at [5000]: shape (1024, 512) to (512, 512)"]);
    // The list's first 200 leaves; "changed only" draws the one that differs.
    expect((await leafRows()).paths).toHaveLength(200);
    expect(await chrome.page.textContent("section.part label.filter")).toBe(" changed only (1)");
    await chrome.page.check("#changed-specs");
    expect(await leafRows()).toEqual({ paths: ["[5000]"], changed: ["[5000]"] });
  });

  test("the CLI page's example (docs/cli.md): the demo program on 128x8 against 64x16", async () => {
    const cli = (...args: string[]) =>
      spawnSync("node", [CLI, ...args], { cwd: OUT, encoding: "utf8" });
    cli("demo", "-o", "example.bin");
    cli("demo", "-o", "wide.bin", "--mesh", "64x16");
    const diff = cli("diff", "example.bin", "wide.bin");
    expect(diff.status).toBe(1);
    expect(diff.stdout).toBe(
      [
        "example.bin and wide.bin differ: 1,000 leaves in 1 group",
        "  1,000 leaves under input: mesh #1 to #1, axis sizes (128, 8) to (64, 16)",
        "",
      ].join("\n"),
    );
    expect(cli("inspect", "--html", "diff.html", "example.bin", "wide.bin").status).toBe(0);
    await goto(join(OUT, "diff.html"));
    expect(await chrome.page.textContent("#diff-summary")).toBe(
      "example.bin and wide.bin differ: 1,000 leaves in 1 group",
    );
    expect((await cells(0, "a")).length).toBe(1024);
    expect((await cells(0, "b")).length).toBe(1024);
    // The picture a person looks at; UPDATE_SCREENSHOT=1 also writes docs/cli.md's.
    await chrome.page.setViewportSize({ width: 1100, height: 1300 });
    await chrome.page.screenshot({ path: join(OUT, "README.png") });
    if (process.env.UPDATE_SCREENSHOT) {
      await chrome.page.screenshot({ path: join(ROOT, "docs", "inspector-diff.png") });
    }
    await chrome.page.setViewportSize({ width: 1100, height: 900 });
  });

  test("two payloads need --html, and no more than two", () => {
    const a = join(OUT, "a.bin");
    writeFileSync(a, A);
    for (const args of [
      [a, a],
      ["--html", join(OUT, "x.html"), "--json", a, a],
      ["--html", join(OUT, "x.html"), a, a, a],
    ]) {
      const run = spawnSync("node", [CLI, "inspect", ...args], { encoding: "utf8" });
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/^colocated-wire: .*\(see colocated-wire inspect --help\)\n$/);
    }
  });
});
