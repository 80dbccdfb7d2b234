import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ProgramPayload, Specs, SpecsPayload } from "../gen/ts/colocated/v1/payload";
import { TreeDef } from "../gen/ts/colocated/v1/tree";
import { encodeProgram, encodeSpecs, FunctionRef, ShapeDtypeStruct, treeFlatten } from "../src";
import { inspectionJson, inspectorPage } from "../src/cli/inspect-page";
import { formatInspection, inspectPayload } from "../src/inspector/inspection";
import { describeKeyPool } from "../src/inspector/key-pool";
import { describeLeafCopies } from "../src/inspector/leaf-copies";
import type { PayloadView } from "../src/inspector/view";
import { chromiumPage } from "./chromium-page";
import { fourShardedLeaves, range, smallMesh } from "./fixtures";
import { buildSpecs } from "./support/build-specs";
import { s2Cases, trainingCases } from "./support/scenarios";

// The inspector page in a real browser (Debian's Chromium, driven by playwright-core): for every
// vector and a few bad payloads, what the page shows must be what `inspect --json` says.
// The page script comes from the build (npm test builds first).

const ROOT = join(__dirname, "..");
const CLI = join(ROOT, "dist", "src", "cli", "main.js");
const OUT = join(ROOT, "out", "inspector");

interface Case {
  name: string;
  bytes: Uint8Array;
  /** A bad payload's error, as test/corpus/bad/*.expect.json has it. */
  expect?: { path: string; code: string };
}

/** Every .bin of test/vectors and of each released golden folder. */
function vectorCases(): Case[] {
  const golden = join(ROOT, "test/golden");
  const dirs = [
    join(ROOT, "test/vectors"),
    ...readdirSync(golden)
      .filter((name) => /^v\d+\.\d+$/.test(name))
      .map((name) => join(golden, name)),
  ];
  return dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((file) => file.endsWith(".bin"))
      .sort()
      .map((file) => ({
        name: relative(ROOT, join(dir, file)),
        bytes: readFileSync(join(dir, file)),
      })),
  );
}

/**
 * The first corrupt payload of each error code whose expected decoder is the one its header
 * names (the page decodes by the header), plus bytes that are not a payload at all.
 */
function badCases(): Case[] {
  const dir = join(ROOT, "test/corpus/bad");
  const byCode = new Map<string, Case>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".bin"))
    .sort()) {
    const expect = JSON.parse(
      readFileSync(join(dir, file.replace(/\.bin$/, ".expect.json")), "utf8"),
    );
    const bytes = readFileSync(join(dir, file));
    const kind = inspectionJson(bytes).header?.kind;
    const headerTells = kind === expect.decoder || expect.code === "wrong-payload-kind";
    if (!byCode.has(expect.code) && headerTells) {
      byCode.set(expect.code, { name: relative(ROOT, join(dir, file)), bytes, expect });
    }
  }
  const example = readFileSync(join(ROOT, "test/vectors/example_program.bin"));
  return [
    ...byCode.values(),
    { name: "empty", bytes: new Uint8Array(0) },
    { name: "example_program cut in half", bytes: example.subarray(0, example.length >> 1) },
  ];
}

jest.setTimeout(30_000);

const chrome = chromiumPage(OUT);

/** Writes the page for a payload and opens it; resolves once it has drawn. */
async function open(name: string, bytes?: Uint8Array): Promise<string> {
  const file = join(OUT, `${name.replace(/[^\w.-]+/g, "_")}.html`);
  writeFileSync(file, inspectorPage(bytes && { bytes, name }));
  await chrome.page.goto(`file://${file}`);
  await chrome.page.waitForSelector('html[data-ready="true"]', { timeout: 10_000 });
  return file;
}

const fieldText = (field: string) =>
  chrome.page.$eval(`#facts [data-field="${field}"]`, (e) => e.textContent);
const number = (n: number) => n.toLocaleString("en-US");

/** What the page shows, as `readPage` reads it from the DOM. */
interface Shown {
  facts: Record<string, string>;
  bar: [string, number][];
  error: { code: string; path: string } | null;
  hasTable: boolean;
  rows: string[][];
  functionName: string | null;
  pickleBytes: string | null;
  parts: { name: string; leaves: (string | null)[][]; status: string; results: number }[];
  shardings: { id: number; cells: [number, string | null, string][] }[];
}

/**
 * Reads everything the page shows in one round trip: the outline expanded, every sharding
 * opened, and each tree searched for `queries[part]` (a DOM element arrives typed `any` here,
 * as the test is compiled without the DOM library).
 */
function readPage(queries: Record<string, string>): Promise<Shown> {
  return chrome.page.$eval(
    "body",
    (body, queries) => {
      const all = (selector: string, root = body) => [...root.querySelectorAll(selector)];
      const text = (e: { textContent: string | null } | null) => e?.textContent ?? null;
      for (const button of all("button.expand-all")) button.click();
      for (const summary of all("details.sharding:not([open]) > summary")) summary.click();
      const parts = all("section.part").map((section) => {
        const name = section.getAttribute("data-part");
        const search = section.querySelector("input[type=search]");
        search.value = queries[name] ?? "";
        search.dispatchEvent(new Event("input"));
        return {
          name,
          leaves: all(".outline li.leaf", section).map((li) => [
            li.getAttribute("data-path"),
            text(li.querySelector('[data-field="type"]')),
            li.querySelector("[data-sharding]")?.getAttribute("data-sharding") ?? null,
          ]),
          status: text(section.querySelector(".status")),
          results: all(".results li", section).length,
        };
      });
      const error = body.querySelector("#error");
      return {
        facts: Object.fromEntries(
          all("#facts [data-field]").map((dd) => [dd.getAttribute("data-field"), text(dd)]),
        ),
        bar: all("#bytes [data-section]").map((seg) => [
          seg.getAttribute("data-section"),
          Number(seg.getAttribute("data-bytes")),
        ]),
        error: error && {
          code: error.getAttribute("data-code"),
          path: error.getAttribute("data-path"),
        },
        hasTable: body.querySelector("#table") !== null,
        rows: all("#table tbody tr").map((tr) => [...tr.children].slice(0, 4).map(text)),
        functionName: text(body.querySelector('[data-field="function-name"]')),
        pickleBytes: text(body.querySelector('[data-field="pickle-bytes"]')),
        parts,
        shardings: all("details.sharding").map((details) => ({
          id: Number(details.getAttribute("data-sharding")),
          cells: all(".cell", details).map((cell) => [
            Number(cell.getAttribute("data-device")),
            cell.getAttribute("data-shard"),
            cell.getAttribute("title"),
          ]),
        })),
      };
    },
    queries,
  ) as Promise<Shown>;
}

/** What the page shows, read back from its DOM, against the view `inspect --json` prints. */
async function checkPage(view: PayloadView): Promise<void> {
  // Each tree is searched for its last leaf's path.
  const queries = Object.fromEntries(
    view.parts
      .filter((p) => p.leaves.length)
      .map((p) => [p.name, p.leaves[p.leaves.length - 1].path]),
  );
  const shown = await readPage(queries);
  const { header } = view;
  expect(shown.facts).toMatchObject({
    bytes: number(view.payloadBytes),
    version: header ? `${header.majorVersion}.${header.minorVersion}` : "unreadable",
    kind: header?.kind ?? "unreadable",
  });
  const sections = Object.entries(view.sections ?? {}).filter(([, bytes]) => bytes > 0);
  expect(shown.bar).toEqual(sections);
  if (view.sections) {
    expect(sections.reduce((n, [, bytes]) => n + bytes, 0)).toBe(view.payloadBytes);
  }
  if (view.error) {
    expect(shown.error).toEqual({ code: view.error.code, path: view.error.path });
    expect(shown.hasTable).toBe(false);
    return;
  }
  expect(shown.error).toBeNull();
  const leaves = view.parts.reduce((n, part) => n + part.leaves.length, 0);
  expect(shown.facts).toMatchObject({
    leaves: number(leaves),
    entries: number(view.table.length),
    shardings: number(view.shardings.length),
    // Each tree's dict keys, in inspect's words.
    ...Object.fromEntries(
      view.parts.map((part) => [`keys-${part.name}`, describeKeyPool(part.keys)]),
    ),
  });
  // How each tree with leaf copies (1.3) writes its leaves, in inspect's words; no line for one
  // without.
  expect(
    Object.fromEntries(Object.entries(shown.facts).filter(([f]) => f.startsWith("leaves-"))),
  ).toEqual(
    Object.fromEntries(
      view.parts.flatMap((part) =>
        part.leafCopies ? [[`leaves-${part.name}`, describeLeafCopies(part.leafCopies)]] : [],
      ),
    ),
  );
  expect(shown.rows).toEqual(
    view.table.map((row) => [String(row.index), row.kind, number(row.bytes), number(row.leaves)]),
  );
  expect(shown.functionName).toBe(view.function?.kind === "name" ? view.function.name : null);
  if (view.function?.kind === "pickled") {
    expect(shown.pickleBytes).toContain(number(view.function.pickleBytes));
  }

  expect(shown.parts.map((part) => part.name)).toEqual(view.parts.map((part) => part.name));
  for (const [i, part] of view.parts.entries()) {
    // A value's leaf that is no array shows what it is, and no "no sharding".
    expect(shown.parts[i].leaves).toEqual(
      part.leaves.map((leaf) => [
        leaf.path,
        "kind" in leaf ? leaf.text : `${leaf.dtype}[${leaf.shape.join(",")}]`,
        leaf.sharding !== null ? String(leaf.sharding) : "kind" in leaf ? null : "none",
      ]),
    );
    const query = queries[part.name];
    if (query === undefined) continue;
    const matches = part.leaves.filter((leaf) =>
      leaf.path.toLowerCase().includes(query.toLowerCase()),
    ).length;
    expect(shown.parts[i].status).toMatch(
      new RegExp(`^${number(matches)} of ${number(part.leaves.length)} leaves match`),
    );
    expect(shown.parts[i].results).toBe(Math.min(matches, 100));
  }

  // Every sharding's grid: each device with the shard of the example leaf it holds.
  expect(shown.shardings.map((d) => d.id)).toEqual(view.shardings.map((s) => s.id));
  for (const [i, sharding] of view.shardings.entries()) {
    const expected = new Map(
      sharding.devices.map((device, at) => {
        const k = sharding.shardOf[at];
        return [device, k === undefined ? null : String(k)] as const;
      }),
    );
    const { cells } = shown.shardings[i];
    expect(cells.length).toBe(sharding.devices.length);
    expect(new Map(cells.map(([device, shard]) => [device, shard]))).toEqual(expected);
    // Each device's title names it and its shard's index ranges.
    const wrongTitles = cells.filter(([device, shard, title]) => {
      if (!title.startsWith(`device ${device} (`)) return true;
      if (shard === null) return false;
      const { start, stop } = sharding.shards[Number(shard)];
      return !title.includes(`[${start.map((s, d) => `${s}:${stop[d]}`).join(", ")}]`);
    });
    expect(wrongTitles).toEqual([]);
  }
}

const vector = (name: string) => readFileSync(join(ROOT, "test/vectors", `${name}.bin`));

/** The bytes a TreeDef's str key pool takes, its other fields left out. */
const poolBytes = ({ strings, keyText, keySizes, keyTrie }: TreeDef) =>
  TreeDef.encode(TreeDef.fromPartial({ strings, keyText, keySizes, keyTrie })).finish().length;

describe("each tree's dict keys", () => {
  test("a key trie (1.3): its keys, labels, nodes, repeats and bytes", () => {
    const bytes = vector("key_trie_1_3");
    expect(formatInspection(inspectPayload(bytes)).split("\n")[1]).toBe(
      "specs keys: 31 str keys as a trie of 18 labels and 20 nodes (4 repeats), 150 bytes",
    );
    const [part] = inspectionJson(bytes).parts;
    expect(part.keys).toEqual({
      form: "trie",
      keys: 31,
      bytes: 150,
      labels: 18,
      nodes: 20,
      repeats: 4,
      nonStrKeys: 0,
    });
    expect(part.keys.bytes).toBe(poolBytes(SpecsPayload.decode(bytes).specs?.treedef as TreeDef));
  });

  test("front-coded keys (1.1), non-str keys beside them, and strings (1.0) per program tree", () => {
    const bytes = vector("key_pool_1_1");
    expect(formatInspection(inspectPayload(bytes)).split("\n")[1]).toBe(
      "specs keys: 8 str keys front-coded, 62 bytes; 2 non-str keys",
    );
    const [part] = inspectionJson(bytes).parts;
    expect(part.keys).toEqual({ form: "front-coded", keys: 8, bytes: 62, nonStrKeys: 2 });
    expect(part.keys.bytes).toBe(poolBytes(SpecsPayload.decode(bytes).specs?.treedef as TreeDef));
    const program = inspectPayload(vector("example_program"));
    expect(formatInspection(program).split("\n").slice(1, 3)).toEqual([
      "input keys: 5 str keys as strings, 42 bytes",
      "output keys: 1 str key as strings, 6 bytes",
    ]);
    expect(inspectionJson(vector("example_program")).parts.map((p) => p.keys.form)).toEqual([
      "strings",
      "strings",
    ]);
    expect(formatInspection(inspectPayload(vector("value_mesh_1_2"))).split("\n")[1]).toBe(
      "value keys: no dict keys",
    );
  });

  test("S7's trie: its bytes are the pool's on the wire, a share of the tree's", () => {
    const s7 = trainingCases().find((c) => c.id === "S7");
    if (!s7) throw new Error("no S7 case");
    const { treedef, leaves } = buildSpecs(s7);
    const bytes = encodeSpecs(treedef, leaves);
    const view = inspectionJson(bytes);
    const { keys } = view.parts[0];
    expect(keys.form).toBe("trie");
    expect(keys.repeats).toBeGreaterThan(0);
    expect(keys.bytes).toBe(poolBytes(SpecsPayload.decode(bytes).specs?.treedef as TreeDef));
    expect(keys.bytes).toBeLessThan(view.sections?.tree ?? 0);
    expect(formatInspection(inspectPayload(bytes)).split("\n")[1]).toMatch(
      /^specs keys: [\d,]+ str keys as a trie of [\d,]+ labels and [\d,]+ nodes \([\d,]+ repeats\), [\d,]+ bytes$/,
    );
  });
});

/** The bytes a Specs' leaf references take, its treedef left out. */
const leafBytes = ({ leaves, leafCopies }: Specs) =>
  Specs.encode(Specs.fromPartial({ leaves, leafCopies })).finish().length;

describe("each tree's leaves, when some are leaf copies (1.3)", () => {
  test("a list of leaves in cycles: the leaves written, the copies, their bytes", () => {
    const bytes = vector("leaf_copies_1_3");
    expect(formatInspection(inspectPayload(bytes)).split("\n").slice(1, 3)).toEqual([
      "specs keys: 2 str keys front-coded, 17 bytes",
      "specs leaves: 36 leaves as 7 written and 2 copies",
    ]);
    const view = inspectionJson(bytes);
    const specs = SpecsPayload.decode(bytes).specs as Specs;
    expect(view.parts[0].leafCopies).toEqual({
      leaves: 36,
      written: 7,
      copies: 2,
      copied: 29,
      repeated: 0,
      bytes: leafBytes(specs),
    });
    expect(view.parts[0].leaves.length).toBe(36);
    // The bytes bar counts the copies among the leaf references, not the tree.
    expect(view.sections?.leaves).toBe(leafBytes(specs));
  });

  test("S2's 10,000 leaves are 16 written and one copy; written for 1.2, no copies", () => {
    const { treedef, leaves } = buildSpecs(s2Cases()[0]);
    const bytes = encodeSpecs(treedef, leaves);
    const lines = formatInspection(inspectPayload(bytes)).split("\n");
    expect(lines.filter((line) => line.startsWith("specs leaves:"))).toEqual([
      "specs leaves: 10,000 leaves as 16 written and 1 copy",
    ]);
    const view = inspectionJson(bytes);
    expect(view.parts[0].leafCopies).toMatchObject({ leaves: 10_000, written: 16, copies: 1 });
    expect(view.sections?.leaves).toBe(view.parts[0].leafCopies?.bytes);
    expect(view.sections?.leaves).toBeLessThan(40);

    const older = encodeSpecs(treedef, leaves, { targetMinorVersion: 2 });
    expect(formatInspection(inspectPayload(older))).not.toMatch(/ leaves: /);
    const olderView = inspectionJson(older);
    expect(olderView.parts[0]).not.toHaveProperty("leafCopies");
    expect(olderView.sections?.leaves).toBeGreaterThan(10_000);
  });

  test("a program's input of REPEATs and cycles; its output without copies has no line", () => {
    const cycled = fourShardedLeaves([8, 8], "bfloat16");
    const small = new ShapeDtypeStruct([8], "float32");
    const block = { attn: { b: small, w: cycled[0] }, mlp: [cycled[1], small] };
    // 4 equal blocks (3 REPEATs, their 12 leaves not in the leaf list), then 64 in a cycle of 4.
    const inputs = treeFlatten<ShapeDtypeStruct>({
      blocks: range(4).map(() => block),
      cycle: range(64).map((i) => cycled[i % 4]),
    });
    const outputs = treeFlatten<ShapeDtypeStruct>([cycled[0], small]);
    const bytes = encodeProgram({
      function: new FunctionRef("json", "dumps"),
      inputs,
      outputs,
      devices: smallMesh().devices,
    });
    const view = inspectionJson(bytes);
    const [input, output] = view.parts;
    expect(input.leaves.length).toBe(80);
    const copies = input.leafCopies;
    if (!copies) throw new Error("the input has no leaf copies");
    expect(copies).toMatchObject({ leaves: 80, written: 8, copies: 1, copied: 60, repeated: 12 });
    expect(copies.written + copies.copied + copies.repeated).toBe(80);
    expect(output).not.toHaveProperty("leafCopies");
    const message = ProgramPayload.decode(bytes);
    expect(copies.bytes).toBe(leafBytes(message.inputSpecs as Specs));
    // Both trees' leaf references, the input's copies among them.
    expect(view.sections?.leaves).toBe(copies.bytes + leafBytes(message.outputSpecs as Specs));
    const lines = formatInspection(inspectPayload(bytes)).split("\n");
    expect(lines.filter((line) => / leaves: /.test(line))).toEqual([
      "input leaves: 80 leaves as 8 written, 1 copy and 12 in the tree's repeats",
    ]);
  });
});

describe("the inspector page in Chromium", () => {
  test.each(vectorCases().map((c) => [c.name, c] as const))("%s", async (_, c) => {
    await open(c.name, c.bytes);
    const view = inspectionJson(c.bytes);
    expect(view.error).toBeNull();
    await checkPage(view);
  });

  const bad = badCases();
  test("bad payloads cover most error codes", () => {
    expect(bad.filter((c) => c.expect).length).toBeGreaterThanOrEqual(10);
  });

  test.each(bad.map((c) => [c.name, c] as const))("bad: %s", async (_, c) => {
    await open(c.name, c.bytes);
    const view = inspectionJson(c.bytes);
    expect(view.error).not.toBeNull();
    if (c.expect) expect(view.error).toMatchObject({ path: c.expect.path, code: c.expect.code });
    await checkPage(view);
  });

  test("inspect --json prints the view, and --html writes the page the browser draws", async () => {
    const payload = join(ROOT, "test/vectors/example_program.bin");
    const json = JSON.parse(
      execFileSync("node", [CLI, "inspect", payload, "--json"], { encoding: "utf8" }),
    );
    expect(json).toEqual(JSON.parse(JSON.stringify(inspectionJson(readFileSync(payload)))));
    const html = join(OUT, "cli-example.html");
    execFileSync("node", [CLI, "inspect", payload, "--html", html]);
    await chrome.page.goto(`file://${html}`);
    await chrome.page.waitForSelector('html[data-ready="true"]');
    // The picture a person looks at; UPDATE_SCREENSHOT=1 also writes docs/cli.md's. docs/inspector.png.
    await chrome.page.setViewportSize({ width: 1100, height: 1500 });
    await chrome.page.screenshot({ path: join(OUT, "example_program.png") });
    if (process.env.UPDATE_SCREENSHOT) {
      await chrome.page.screenshot({ path: join(ROOT, "docs", "inspector.png") });
    }
    await chrome.page.setViewportSize({ width: 1100, height: 900 });
    await checkPage(json);

    const bad = join(ROOT, "test/corpus/bad/duplicate-device--delta-ids.bin");
    const failed = spawnSync("node", [CLI, "inspect", bad, "--html", join(OUT, "cli-bad.html")], {
      encoding: "utf8",
    });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/table\[0\]\.device_list\.delta\.deltas\[2\]/);
    expect(readFileSync(join(OUT, "cli-bad.html"), "utf8")).toContain('id="payload"');
  });

  test("without a payload, the page opens one from its file picker", async () => {
    const html = join(OUT, "cli-empty.html");
    execFileSync("node", [CLI, "inspect", "--html", html]);
    await chrome.page.goto(`file://${html}`);
    await chrome.page.waitForSelector('html[data-ready="true"]');
    expect(await chrome.page.$("#facts")).toBeNull();
    const payload = join(ROOT, "test/vectors/trees.bin");
    await chrome.page.setInputFiles("#picker", payload);
    await chrome.page.waitForSelector("#facts");
    await chrome.page.waitForSelector('html[data-ready="true"]');
    expect(await fieldText("name")).toBe("trees.bin");
    await checkPage(inspectionJson(readFileSync(payload)));
  });

  test("the summary says how each tree writes its keys and, with copies, its leaves", async () => {
    await open("key_trie_1_3", vector("key_trie_1_3"));
    expect(await fieldText("keys-specs")).toBe(
      "31 str keys as a trie of 18 labels and 20 nodes (4 repeats), 150 bytes",
    );
    // Its leaves are written with copies (1.3): a line of their own.
    expect(await fieldText("leaves-specs")).toBe("31 leaves as 6 written and 2 copies");
    await open("key_pool_1_1", vector("key_pool_1_1"));
    expect(await fieldText("keys-specs")).toBe("8 str keys front-coded, 62 bytes; 2 non-str keys");
    expect(await chrome.page.$('#facts [data-field="leaves-specs"]')).toBeNull();
  });

  test("the outline opens with the keyboard", async () => {
    await open("example_program", readFileSync(join(ROOT, "test/vectors/example_program.bin")));
    const closed = 'section.part[data-part="input"] button.toggle[aria-expanded="false"]';
    await chrome.page.focus(closed);
    await chrome.page.keyboard.press("Enter");
    expect(await chrome.page.$eval(":focus", (e) => e.getAttribute("aria-expanded"))).toBe("true");
  });

  test("10,000 leaves on 4,096 devices: the outline and the grids are drawn lazily", async () => {
    const { treedef, leaves } = buildSpecs(s2Cases()[0]);
    const bytes = encodeSpecs(treedef, leaves);
    await open("S2", bytes);
    const view = inspectionJson(bytes);
    expect(await fieldText("leaves")).toBe("10,000");
    expect(await fieldText("leaves-specs")).toBe("10,000 leaves as 16 written and 1 copy");
    expect(view.shardings.length).toBe(16);
    // The list's first 200 children are drawn, the rest on request.
    expect(await chrome.page.$$eval(".outline li.leaf", (lis) => lis.length)).toBe(200);
    // One grid of 4,096 devices is drawn open; the others wait to be opened.
    expect(await chrome.page.$$eval(".cell", (cells) => cells.length)).toBe(4096);
    expect(await chrome.page.$$eval("details.sharding[open]", (open) => open.length)).toBe(1);
    // A 3-D mesh is drawn as small multiples: one 32 × 8 grid per "data" coordinate.
    expect(await chrome.page.$$eval("#sharding-0 figure.mesh", (f) => f.length)).toBe(16);
    await chrome.page.screenshot({ path: join(OUT, "S2.png") });
  });
});
