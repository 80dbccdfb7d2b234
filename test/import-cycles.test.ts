import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const SRC = join(__dirname, "..", "src");

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith(".ts")
        ? [join(dir, e.name)]
        : [],
  );
}

/** The files of src/ a file imports at run time (type-only imports left out), by path. */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const found: string[] = [];
  for (const s of source.statements) {
    const isImport = ts.isImportDeclaration(s) && !s.importClause?.isTypeOnly;
    const isExport = ts.isExportDeclaration(s) && !s.isTypeOnly;
    const spec = (isImport || isExport) && s.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith(".")) continue;
    const base = resolve(dirname(file), spec.text);
    const target = [`${base}.ts`, join(base, "index.ts")].find(existsSync);
    if (target !== undefined) found.push(target);
  }
  return found;
}

/** The import cycles among `graph`'s files: each a strongly connected set of two or more. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const cycle = stack.splice(stack.indexOf(v));
    if (cycle.length > 1) found.push(cycle.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test("src/ has no import cycles (type-only imports aside)", () => {
  const files = sources(SRC);
  const graph = new Map(files.map((f) => [f, runtimeImports(f)]));
  expect(files.length).toBeGreaterThan(100);
  expect([...graph.values()].flat().length).toBeGreaterThan(files.length); // imports were read
  expect(cycles(graph).map((c) => c.map((f) => relative(SRC, f)))).toEqual([]);
});

test("the cycle finder finds a cycle of three and leaves a chain alone", () => {
  const graph = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["a", "d"]],
    ["d", []],
  ]);
  expect(cycles(graph)).toEqual([["a", "b", "c"]]);
  graph.set("c", ["d"]);
  expect(cycles(graph)).toEqual([]);
});
