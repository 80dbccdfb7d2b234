import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProgramPayload } from "../gen/ts/colocated/v1/payload";
import { DecodeError, encodeProgram } from "../src";
import { exampleProgram, runnableExample } from "../src/example";
import { inspectPayload } from "../src/inspector/inspection";
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
    mkdirSync(join(dir, "canonical"));
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
      expect(run.stderr).toMatch(/^colocated-wire: .*bad\.txt: not base64 text/);
    }
  });

  test("demo prints the example program's inspection and writes it with -o", () => {
    const out = cli("demo", "-o", join(dir, "demo.bin"));
    expect(out).toMatch(/^program payload: \d+ bytes, table \d+ bytes in 10 entries/);
    expect(out).toMatch(/250 input leaves/);
    expect(readFileSync(join(dir, "demo.bin"))).toEqual(
      Buffer.from(encodeProgram(runnableExample())),
    );
    expect(ProgramPayload.decode(readFileSync(join(dir, "demo.bin"))).function).toMatchObject({
      function: { $case: "byName", value: { module: "colocated_wire.examples" } },
    });
  });

  test("a usage mistake is one line with a hint to --help, and exits 2", () => {
    for (const [args, line] of [
      [["inspect", "--bogus", "x"], "unknown option '--bogus' (see colocated-wire inspect --help)"],
      [["frobnicate"], "unknown command 'frobnicate' (see colocated-wire --help)"],
      [
        ["call", "x.bin"],
        "give either -t, --target <host:port> or -w, --worker <host:port> (repeated) (see colocated-wire call --help)",
      ],
      [
        ["demo", "--mesh", "2by4"],
        "option '--mesh <DATAxMODEL>' argument '2by4' is invalid. not DATAxMODEL, e.g. 2x4 (see colocated-wire demo --help)",
      ],
    ] as const) {
      const run = spawnSync("node", [CLI, ...args], { encoding: "utf8" });
      expect(run.status).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr.split("\n")).toEqual([`colocated-wire: ${line}`, ""]);
    }
  });

  test("--version prints the package's version", () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8"));
    expect(cli("--version")).toBe(`${version}\n`);
  });

  test("a bad payload prints the library's DecodeError message as it is, and exits 1", () => {
    const bytes = toBytes(validPayload()).subarray(0, 30);
    let message = "";
    try {
      inspectPayload(bytes);
    } catch (error) {
      expect(error).toBeInstanceOf(DecodeError);
      message = (error as DecodeError).message;
    }
    expect(message).toMatch(/^\S+: /);
    const run = spawnSync("node", [CLI, "inspect", file("truncated.bin", bytes)], {
      encoding: "utf8",
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`colocated-wire: ${message}\n`);
  });

  test("files that are missing, and output folders that are missing, are errors (exit 1)", () => {
    const missing = join(dir, "missing.bin");
    const read = spawnSync("node", [CLI, "decode", missing], { encoding: "utf8" });
    expect([read.status, read.stderr]).toEqual([
      1,
      `colocated-wire: ${missing}: no such file or folder\n`,
    ]);
    const out = join(dir, "no-such-folder", "x.bin");
    const write = spawnSync("node", [CLI, "demo", "-o", out], { encoding: "utf8" });
    expect([write.status, write.stderr]).toEqual([
      1,
      `colocated-wire: ${out}: no such folder (it is not created for you)\n`,
    ]);
    expect(existsSync(join(dir, "no-such-folder"))).toBe(false);
  });

  test("encode refuses to write binary to a terminal unless -o -", () => {
    const json = file(
      "tty.json",
      Buffer.from(cli("decode", file("tty.bin", toBytes(validPayload())))),
    );
    // A preloaded module makes standard output claim to be a terminal, without a real one.
    const tty = file("tty.js", Buffer.from("process.stdout.isTTY = true;\n"));
    const refused = spawnSync("node", ["-r", tty, CLI, "encode", json], { encoding: "utf8" });
    expect(refused.status).toBe(2);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^colocated-wire: refusing to write binary to a terminal/);
    const forced = spawnSync("node", ["-r", tty, CLI, "encode", json, "-o", "-"]);
    expect(forced.status).toBe(0);
    expect(forced.stdout).toEqual(Buffer.from(toBytes(validPayload())));
    const base64 = spawnSync("node", ["-r", tty, CLI, "encode", "--base64", json], {
      encoding: "utf8",
    });
    expect(base64.stdout).toBe(Buffer.from(toBytes(validPayload())).toString("base64"));
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
