import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The README runner itself (CI runs it on README.md): it must fail on a failing block, name the
// block by its line, and skip only blocks that say why.
const RUNNER = join(__dirname, "..", "scripts", "readme-blocks.mjs");
const dir = mkdtempSync(join(tmpdir(), "readme-blocks-test-"));

function runOn(markdown: string) {
  const file = join(dir, "fake.md");
  writeFileSync(file, markdown);
  return spawnSync("node", [RUNNER, file], { cwd: dir, encoding: "utf8" });
}

const fence = (lang: string, body: string) => `\`\`\`${lang}\n${body}\n\`\`\`\n`;

describe("scripts/readme-blocks.mjs", () => {
  test("runs the blocks in order and passes when every one passes", () => {
    const run = runOn(
      [
        "# fake\n",
        fence("sh", "echo first > order.txt"),
        "<!-- readme: skip (it would fail) -->",
        fence("sh", "exit 3"),
        fence("sh", 'test "$(cat order.txt)" = first && echo second'),
      ].join("\n"),
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("fake.md:8: sh skipped (it would fail)");
    expect(run.stdout).toContain("fake.md:12: sh ok\n    second");
  });

  test("fails when a block fails, naming its line; a skip without a reason fails too", () => {
    const run = runOn(
      [
        fence("sh", "true"),
        fence("sh", "echo broken >&2; exit 7"),
        "<!-- readme: skip -->",
        fence("sh", "true"),
        fence("rust", "fn main() {}"),
      ].join("\n"),
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("fake.md:5: the sh block failed: exit 7\nbroken");
    expect(run.stderr).toContain("fake.md:10: the sh block failed: a skip needs a reason");
    expect(run.stderr).toContain(
      'fake.md:14: the rust block failed: no runner for language "rust"',
    );
    expect(run.stderr).toContain("3 block(s) failed, at lines 5, 10, 14");
  });

  // Two processes sharing a pipe can run their lines into one (each print is two writes).
  test.each([
    [
      "on lines of their own",
      'echo "listening on 127.0.0.1:1111"; echo "listening on 127.0.0.1:2222"',
    ],
    ["run into one line", "printf 'listening on 127.0.0.1:1111listening on 127.0.0.1:2222\\n\\n'"],
  ])(
    "a worker block of N servers gives the blocks after it N addresses, in the order printed (%s)",
    (_, print) => {
      const run = runOn(
        [
          "<!-- readme: worker 2 -->",
          fence("sh", `${print}; exec cat`),
          fence("sh", 'test "127.0.0.1:41235 127.0.0.1:41236" = "127.0.0.1:1111 127.0.0.1:2222"'),
        ].join("\n"),
      );
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      expect(run.stdout).toContain(
        "fake.md:2: sh started, listening on 127.0.0.1:1111, 127.0.0.1:2222",
      );
    },
  );

  test("a TypeScript block that does not compile fails at its README line", () => {
    const run = runOn(["# ts\n", fence("ts", 'const n: number = "text";')].join("\n"));
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/fake\.md:4:7: error TS2322/);
  });
});
