import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { encodeProgram, encodeSpecs, type Program } from "../src";
import { build, type ModelDesc, programModel, specsModel } from "./property-models";

/**
 * TypeScript and Python write the same bytes for the same random model: the models go to
 * Python as JSON descriptions with TypeScript's bytes, and python/tests/property_models.py
 * builds each from JAX objects, serializes it and compares.
 */
const ROOT = join(__dirname, "..");

function bytesOf(desc: ModelDesc): string {
  const { specs, program } = build(desc);
  const bytes = program
    ? encodeProgram(program as Program)
    : encodeSpecs(specs.treedef, specs.leaves);
  return Buffer.from(bytes).toString("hex");
}

beforeAll(() => {
  // The first run on a fresh clone creates .venv.
  execFileSync("bash", ["scripts/python-env.sh"], { cwd: ROOT, stdio: "inherit" });
}, 900_000);

test("TypeScript and Python give the same bytes for 300 random models", () => {
  const models = [
    ...fc.sample(specsModel, { seed: 20_240_603, numRuns: 200 }),
    ...fc.sample(programModel, { seed: 20_240_604, numRuns: 100 }),
  ];
  const dir = mkdtempSync(join(tmpdir(), "colocated-wire-"));
  try {
    const file = join(dir, "models.jsonl");
    const lines = models.map((model) => JSON.stringify({ model, bytes: bytesOf(model) }));
    writeFileSync(file, `${lines.join("\n")}\n`);
    const run = spawnSync(
      join(ROOT, ".venv", "bin", "python"),
      [join(ROOT, "python", "tests", "property_models.py"), file],
      {
        encoding: "utf8",
        env: {
          ...process.env,
          JAX_PLATFORMS: "cpu",
          XLA_FLAGS: "--xla_force_host_platform_device_count=256",
        },
      },
    );
    expect(run.stdout.trim().split("\n").slice(-4).join("\n")).toMatch(/^300 of 300 models/m);
    expect(run.status).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
