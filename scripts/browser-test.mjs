// The core entry in a real browser: bundles src/index.ts for the browser platform, loads it into
// headless Chromium (Debian's, driven by playwright-core), and decodes every committed vector
// in the page. Each result must equal the vector's committed JSON form, and canonicalizing it
// must give back its bytes. Fails if any vector fails or none ran.
// Run: node scripts/browser-test.mjs (CHROMIUM=/path/to/chromium to use another browser).
import { deepStrictEqual } from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Every vector: test/vectors/*.bin and the golden ones of released versions, with JSON forms. */
function vectors() {
  const dirs = [join(root, "test/vectors")];
  const golden = join(root, "test/golden");
  for (const release of readdirSync(golden).filter((name) => /^v\d+\.\d+$/.test(name))) {
    dirs.push(join(golden, release));
  }
  return dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((file) => file.endsWith(".bin"))
      .map((file) => ({
        name: relative(root, join(dir, file)),
        base64: readFileSync(join(dir, file)).toString("base64"),
        json: JSON.parse(readFileSync(join(dir, file.replace(/\.bin$/, ".json")), "utf8")),
      })),
  );
}

/** The core entry as one browser script that sets globalThis.wire. */
async function bundle() {
  const result = await build({
    entryPoints: [join(root, "src/index.ts")],
    bundle: true,
    platform: "browser",
    format: "iife",
    globalName: "wire",
    write: false,
    logLevel: "warning",
  });
  return result.outputFiles[0].text;
}

/** Decodes one vector in the page: its JSON form, and whether it canonicalizes to itself. */
function decodeInPage({ base64 }) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const json = wire.payloadToJson(bytes);
  const again = wire.canonicalizePayload(bytes);
  const same = again.length === bytes.length && again.every((b, i) => b === bytes[i]);
  return { json, same };
}

if (!existsSync(executablePath)) {
  console.error(`browser-test: no Chromium at ${executablePath} (apt-get install -y chromium)`);
  process.exit(1);
}
const cases = vectors();
const script = await bundle();
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const failures = [];
let passed = 0;
try {
  const page = await browser.newPage();
  page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
  await page.setContent("<!doctype html><title>colocated-wire</title>");
  await page.addScriptTag({ content: script });
  // A page with Node's globals would not prove the core needs none of them.
  const globals = await page.evaluate(() => [typeof Buffer, typeof process, typeof require]);
  deepStrictEqual(globals, ["undefined", "undefined", "undefined"]);
  console.log(`browser-test: ${await browser.version()}, ${cases.length} vectors`);
  for (const c of cases) {
    try {
      const { json, same } = await page.evaluate(decodeInPage, { base64: c.base64 });
      deepStrictEqual(json, c.json, `${c.name}: the JSON form decoded in the page`);
      if (!same) throw new Error(`${c.name}: canonicalizing in the page changed the bytes`);
      passed++;
    } catch (error) {
      failures.push(`${c.name}: ${error.message.split("\n")[0]}`);
    }
  }
} finally {
  await browser.close();
}
for (const failure of failures) console.error(`FAIL ${failure}`);
if (failures.length > 0 || passed === 0) {
  console.error(`browser-test: ${passed} of ${cases.length} vectors passed`);
  process.exit(1);
}
console.log(`browser-test: all ${passed} vectors decode in Chromium as committed`);
