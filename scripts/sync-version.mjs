// Writes package.json's "version" into python/colocated_wire/_version.py: one version for the npm
// and the pip package. package.json's "version" script runs this during `npm version <x>`, after
// npm has bumped package.json and before it commits; the file is staged so that commit has it.
//
//   node scripts/sync-version.mjs          write (and, under `npm version`, git add) the file
//   node scripts/sync-version.mjs --check  fail if the file does not hold package.json's version
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "python", "colocated_wire", "_version.py");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const text =
  `# Written by scripts/sync-version.mjs from package.json's "version" (npm version runs it).\n` +
  `__version__ = "${version}"\n`;

if (process.argv.includes("--check")) {
  if (readFileSync(target, "utf8") !== text) {
    console.error(`sync-version: ${relative(root, target)} is not version ${version}; run it`);
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  // Only npm version's own commit should pick the file up; a plain run leaves the index alone.
  if (process.env.npm_lifecycle_event === "version") {
    execFileSync("git", ["add", "--", target], { cwd: root, stdio: "inherit" });
  }
  console.log(`sync-version: ${relative(root, target)} is version ${version}`);
}
