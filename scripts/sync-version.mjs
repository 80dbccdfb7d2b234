// Writes package.json's "version" into python/colocated_wire/_version.py and
// src/package-version.ts: one version for the npm and the pip package, known to the library
// without reading package.json (a browser has no file system). package.json's "version" script
// runs this during `npm version <x>`, after npm has bumped package.json and before it commits;
// the files are staged so that commit has them.
//
//   node scripts/sync-version.mjs          write (and, under `npm version`, git add) the files
//   node scripts/sync-version.mjs --check  fail if the files do not hold package.json's version
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const written = `Written by scripts/sync-version.mjs from package.json's "version" (npm version runs it).`;
const files = {
  [join(root, "python", "colocated_wire", "_version.py")]:
    `# ${written}\n__version__ = "${version}"\n`,
  [join(root, "src", "package-version.ts")]:
    `// ${written}\n/** This package's version, as package.json says it. */\nexport const PACKAGE_VERSION = "${version}";\n`,
};

for (const [target, text] of Object.entries(files)) {
  if (process.argv.includes("--check")) {
    if (readFileSync(target, "utf8") !== text) {
      console.error(`sync-version: ${relative(root, target)} is not version ${version}; run it`);
      process.exit(1);
    }
    continue;
  }
  writeFileSync(target, text);
  // Only npm version's own commit should pick the file up; a plain run leaves the index alone.
  if (process.env.npm_lifecycle_event === "version") {
    execFileSync("git", ["add", "--", target], { cwd: root, stdio: "inherit" });
  }
  console.log(`sync-version: ${relative(root, target)} is version ${version}`);
}
