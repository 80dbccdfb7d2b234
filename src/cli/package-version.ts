import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** The folder of this package's package.json (the repository, or node_modules/colocated-wire). */
export function packageRoot(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file) && JSON.parse(readFileSync(file, "utf8")).name === "colocated-wire") {
      return dir;
    }
    if (dirname(dir) === dir) throw new Error(`${__dirname}: no colocated-wire package.json above`);
  }
}
