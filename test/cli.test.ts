import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProgramPayload } from "../gen/ts/colocated/v1/payload";
import { encodeProgram } from "../src";
import { exampleProgram } from "../src/example";
import { toBytes, validPayload } from "./fixtures";

// The tests run the built command line, as a user would (npm test builds it first).
const CLI = join(__dirname, "..", "dist", "src", "cli", "main.js");
const dir = mkdtempSync(join(tmpdir(), "colocated-wire-cli-"));

function cli(...args: string[]): string {
  return execFileSync("node", [CLI, ...args], { encoding: "utf8" });
}

function file(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe("colocated-wire CLI", () => {
  test("decode then encode reproduces the bytes exactly", () => {
    for (const [name, bytes] of [
      ["program.bin", encodeProgram(exampleProgram({ leaves: 40 }))],
      ["specs.bin", toBytes(validPayload())],
    ] as const) {
      const json = file(`${name}.json`, Buffer.from(cli("decode", file(name, bytes))));
      cli("encode", json, "-o", join(dir, `${name}.again`));
      expect(readFileSync(join(dir, `${name}.again`))).toEqual(Buffer.from(bytes));
    }
  });

  test("unknown fields and unknown enum numbers survive the JSON form", () => {
    const message = ProgramPayload.decode(encodeProgram(exampleProgram({ leaves: 4 })));
    message._unknownFields = { [8 * 99 + 2]: [new Uint8Array([3, 1, 2, 3])] };
    message.table!.entries[1]._unknownFields = { [8 * 40]: [new Uint8Array([7])] };
    const bytes = ProgramPayload.encode(message).finish();
    const json = cli("decode", file("unknown.bin", bytes));
    expect(JSON.parse(json)["@unknown"]).toEqual({ "794": ["AwECAw=="] });
    cli("encode", file("unknown.json", Buffer.from(json)), "-o", join(dir, "unknown.again"));
    expect(readFileSync(join(dir, "unknown.again"))).toEqual(Buffer.from(bytes));
  });

  test("inspect shows each entry, its referrers, and the inlined cost", () => {
    const out = cli("inspect", file("example.bin", encodeProgram(exampleProgram())));
    expect(out).toMatch(/^program payload: \d+ bytes, table \d+ bytes in 11 entries/);
    expect(out).toMatch(/0 {2}deviceList +\d+ {2}entries 1; devices/);
    expect(out).toMatch(/250 input leaves/);
    expect(out).toMatch(/with every shared object inlined: \d+ bytes \(\d+\.\dx this payload\)/);
  });

  test("--base64 reads and writes a payload as the base64 text of JAX's output-spec carrier", () => {
    const bytes = toBytes(validPayload());
    const text = Buffer.from(bytes).toString("base64");
    const carrier = file("carrier.txt", Buffer.from(`${text}\n`)); // a trailing newline is fine
    expect(cli("decode", "--base64", carrier)).toBe(cli("decode", file("carrier.bin", bytes)));
    expect(cli("inspect", "--base64", carrier)).toMatch(/^specs payload: \d+ bytes, table/);
    cli("canonicalize", "--base64", "-d", join(dir, "canonical"), carrier);
    expect(readFileSync(join(dir, "canonical", "carrier.txt"), "ascii")).toBe(text);
    const json = file("carrier.json", Buffer.from(cli("decode", "--base64", carrier)));
    expect(cli("encode", "--base64", json)).toBe(text);
    for (const bad of ["not base64!", "QUJD\nREVG", "QUI", "QUJ=", ""]) {
      const run = spawnSync(
        "node",
        [CLI, "decode", "--base64", file("bad.txt", Buffer.from(bad))],
        {
          encoding: "utf8",
        },
      );
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/^colocated-wire: .*bad\.txt is not base64 text/);
    }
  });

  test("demo writes the example payload and prints its summary", () => {
    const out = cli("demo", "-o", join(dir, "demo.bin"));
    expect(out).toMatch(/program payload: \d+ bytes/);
    expect(readFileSync(join(dir, "demo.bin"))).toEqual(
      Buffer.from(encodeProgram(exampleProgram())),
    );
  });

  test("every error prints one clear line and exits non-zero", () => {
    const truncated = file("bad.bin", toBytes(validPayload()).subarray(0, 30));
    for (const args of [
      ["inspect", truncated],
      ["decode", join(dir, "missing.bin")],
      ["encode", truncated],
    ]) {
      const run = spawnSync("node", [CLI, ...args], { encoding: "utf8" });
      expect(run.status).not.toBe(0);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/^colocated-wire: /);
    }
  });
});
