// Bundles the inspector page's script (src/inspector/page/page.ts, the browser-safe core and plain
// DOM) into dist/src/inspector/page.bundle.js, which `colocated-wire inspect --html` inlines
// into the page it writes. Part of `npm run build`, after tsc.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
await build({
  entryPoints: [join(root, "src/inspector/page/page.ts")],
  outfile: join(root, "dist/src/inspector/page.bundle.js"),
  bundle: true,
  minify: true,
  platform: "browser",
  format: "iife",
  target: "es2020",
  legalComments: "none",
  logLevel: "warning",
});
