#!/usr/bin/env node
// Runs every fenced code block of the README, in order, as a new user would paste it:
//   ts      type-checked together (tsc, strict, nodenext), then each run with node as ESM;
//   python  run with .venv/bin/python on 8 JAX CPU devices;
//   sh      run with bash -euo pipefail, with the package's bin on PATH.
// They run in a fresh temporary folder whose node_modules/colocated-wire is a link to this
// repository (so `import ... from "colocated-wire"` gets the built dist/, through the package's
// own exports), with node_modules/.bin/colocated-wire and a link to .venv.
// A comment on the line before a block changes what happens to it:
//   <!-- readme: skip (why) -->  the block is not run; the reason is required.
//   <!-- readme: worker -->      the block starts a server: it runs in the background until every
//                                block has run, and the address it prints ("listening on ADDR")
//                                replaces 127.0.0.1:41235 in the blocks after it.
//   <!-- readme: worker N -->    the block starts N servers (one job of N workers): it runs once
//                                all N have printed their address, which replace 127.0.0.1:41235,
//                                127.0.0.1:41236, ... in the blocks after it, in the order printed.
//                                A coordinator address 127.0.0.1:41299 in it becomes a free port.
// A server that has not printed its addresses within SERVER_DEADLINE_MS, or a block still running
// after BLOCK_DEADLINE_MS, fails with what it printed, so that a hang fails CI instead of stalling it.
// Usage: node scripts/readme-blocks.mjs [README.md]  (npm run build and scripts/python-env.sh
// first). Exits 1 when a block fails, naming it by its line in the README.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const README = resolve(process.argv[2] ?? join(ROOT, "README.md"));
const NAME = relative(process.cwd(), README) || basename(README);
/** The placeholder of a worker block's i-th address: 127.0.0.1:41235, then :41236, ... */
const placeholder = (i) => `127.0.0.1:${41235 + i}`;
/** The coordinator address of a job's worker block, replaced by a free port when it runs. */
const COORDINATOR = "127.0.0.1:41299";
const SERVER_DEADLINE_MS = 180_000;
const BLOCK_DEADLINE_MS = 600_000;
const LANGS = { ts: "ts", typescript: "ts", python: "python", py: "python", sh: "sh", bash: "sh" };

/** The README's fenced blocks: language, the line of the opening fence, body, marker. */
function readBlocks(text) {
  const lines = text.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line));
    if (end < 0) throw new Error(`${NAME}:${i + 1}: a code block that never closes`);
    let before = i - 1;
    while (before >= 0 && lines[before].trim() === "") before--;
    const marker = /^<!-- readme: (skip|worker)\b(.*?)-->\s*$/.exec(lines[before] ?? "");
    blocks.push({
      line: i + 1,
      lang: open[1],
      body: `${lines.slice(i + 1, end).join("\n")}\n`,
      marker: marker?.[1],
      why: marker?.[2].trim(),
    });
    i = end;
  }
  return blocks;
}

/** A temporary folder where "colocated-wire", its bin and .venv resolve to this repository. */
function makeWorkspace() {
  const dir = mkdtempSync(join(tmpdir(), "readme-blocks-"));
  mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
  symlinkSync(ROOT, join(dir, "node_modules", "colocated-wire"), "dir");
  symlinkSync(join(ROOT, "node_modules", "@types"), join(dir, "node_modules", "@types"), "dir");
  symlinkSync(join(ROOT, ".venv"), join(dir, ".venv"), "dir");
  const bin = join(dir, "node_modules", ".bin", "colocated-wire");
  writeFileSync(bin, `#!/bin/sh\nexec node "${join(ROOT, "dist", "src", "cli", "main.js")}" "$@"\n`);
  chmodSync(bin, 0o755);
  writeFileSync(join(dir, "package.json"), '{ "type": "module", "private": true }\n');
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        types: ["node"],
        skipLibCheck: true,
        outDir: "out",
      },
      include: ["*.mts"],
    }),
  );
  return dir;
}

/** tsc over every TypeScript block at once; its errors, each at its README line. */
function compileTs(dir, blocks) {
  if (blocks.length === 0) return new Map();
  for (const b of blocks) writeFileSync(join(dir, `block-${b.line}.mts`), b.body);
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const run = spawnSync("node", [tsc, "-p", dir, "--pretty", "false"], { encoding: "utf8" });
  const errors = new Map();
  for (const line of `${run.stdout}${run.stderr}`.split("\n")) {
    const found = /block-(\d+)\.mts\((\d+),(\d+)\): (.*)$/.exec(line);
    if (!found) continue;
    const at = Number(found[1]);
    const where = `${NAME}:${at + Number(found[2])}:${found[3]}`;
    errors.set(at, [...(errors.get(at) ?? []), `${where}: ${found[4]}`]);
  }
  if (run.status !== 0 && errors.size === 0) errors.set(0, [`tsc failed: ${run.stdout}${run.stderr}`]);
  return errors;
}

/** A port nobody listens on now, on 127.0.0.1. */
function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePromise(port));
    });
  });
}

/** Starts a worker block in the background; resolves with it and the `count` addresses it printed. */
async function startServer(dir, env, body, count) {
  const script = body.replaceAll(COORDINATOR, `127.0.0.1:${await freePort()}`);
  const child = spawn("bash", ["-c", script], { cwd: dir, env, detached: true });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  return new Promise((resolvePromise, reject) => {
    const deadline = setTimeout(() => {
      stopServer({ child });
      const printed = `stdout:\n${out}stderr:\n${err}`;
      reject(new Error(`no ${count} addresses within ${SERVER_DEADLINE_MS / 1000} s\n${printed}`));
    }, SERVER_DEADLINE_MS);
    child.on("exit", (code) => {
      clearTimeout(deadline);
      reject(new Error(`exited (${code}) before listening\n${err}`));
    });
    child.stdout.on("data", (chunk) => {
      out += chunk;
      // Up to the port's last digit: processes sharing the pipe may run two lines into one,
      // and a chunk may end inside a port.
      const found = [...out.matchAll(/listening on (\S+?:\d+)(?=\D)/g)].map((m) => m[1]);
      if (found.length >= count) {
        clearTimeout(deadline);
        resolvePromise({ child, addresses: found.slice(0, count) });
      }
    });
  });
}

function stopServer({ child }) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolvePromise) => {
    child.on("exit", () => resolvePromise());
    process.kill(-child.pid, "SIGTERM"); // its process group: bash and the worker it started
  });
}

/** The text with each worker placeholder replaced by the address it stands for. */
function withAddresses(text, addresses) {
  return addresses.reduce((t, address, i) => t.replaceAll(placeholder(i), address), text);
}

function runBlock(dir, env, block, addresses) {
  const body = withAddresses(block.body, addresses);
  const lang = LANGS[block.lang];
  let command;
  if (lang === "ts") {
    // tsc emitted the placeholder address as it is; the compiled string takes the real one.
    const js = join(dir, "out", `block-${block.line}.mjs`);
    if (addresses.length) writeFileSync(js, withAddresses(readFileSync(js, "utf8"), addresses));
    command = ["node", [js]];
  } else if (lang === "python") {
    writeFileSync(join(dir, `block-${block.line}.py`), body);
    command = [join(dir, ".venv", "bin", "python"), [`block-${block.line}.py`]];
  } else command = ["bash", ["-euo", "pipefail", "-c", body]];
  return spawnSync(command[0], command[1], {
    cwd: dir,
    env,
    encoding: "utf8",
    timeout: BLOCK_DEADLINE_MS,
    killSignal: "SIGKILL",
  });
}

async function main() {
  const blocks = readBlocks(readFileSync(README, "utf8"));
  const dir = makeWorkspace();
  const env = {
    ...process.env,
    PATH: `${join(dir, "node_modules", ".bin")}:${process.env.PATH}`,
    JAX_PLATFORMS: "cpu",
    XLA_FLAGS: "--xla_force_host_platform_device_count=8",
  };
  const failures = [];
  const fail = (block, why) => {
    failures.push(block.line);
    console.error(`${NAME}:${block.line}: the ${block.lang} block failed: ${why}`);
  };
  const servers = [];
  let addresses = [];
  try {
    for (const b of blocks) {
      if (b.marker === "skip" && !b.why) fail(b, "a skip needs a reason: <!-- readme: skip (why) -->");
      if (b.marker !== "skip" && !LANGS[b.lang]) {
        fail(b, `no runner for language "${b.lang}"; mark it <!-- readme: skip (why) -->`);
      }
    }
    const tsBlocks = blocks.filter((b) => LANGS[b.lang] === "ts" && b.marker !== "skip");
    const tsErrors = compileTs(dir, tsBlocks);
    for (const [line, errors] of tsErrors) {
      const block = tsBlocks.find((b) => b.line === line) ?? { line, lang: "ts" };
      fail(block, `it does not compile:\n  ${errors.join("\n  ")}`);
    }
    for (const b of blocks) {
      if (b.marker === "skip" || !LANGS[b.lang] || tsErrors.has(b.line)) {
        if (b.marker === "skip") console.log(`${NAME}:${b.line}: ${b.lang} skipped ${b.why}`);
        continue;
      }
      if (b.marker === "worker") {
        try {
          const server = await startServer(dir, env, b.body, Number(b.why) || 1);
          servers.push(server);
          addresses = server.addresses;
          console.log(`${NAME}:${b.line}: ${b.lang} started, listening on ${addresses.join(", ")}`);
        } catch (error) {
          fail(b, error.message);
        }
        continue;
      }
      const run = runBlock(dir, env, b, addresses);
      if (run.status === 0) {
        console.log(`${NAME}:${b.line}: ${b.lang} ok`);
        if (run.stdout.trim()) console.log(run.stdout.trimEnd().replace(/^/gm, "    "));
      }
      else {
        const why =
          run.error?.code === "ETIMEDOUT"
            ? `still running after ${BLOCK_DEADLINE_MS / 1000} s`
            : `exit ${run.status ?? run.signal}`;
        fail(b, `${why}\n${run.stdout}${run.stderr}`.trimEnd());
      }
    }
  } finally {
    await Promise.all(servers.map(stopServer));
    rmSync(dir, { recursive: true, force: true });
  }
  if (failures.length) {
    console.error(`${NAME}: ${failures.length} block(s) failed, at lines ${failures.sort((a, b) => a - b).join(", ")}`);
    process.exit(1);
  }
  console.log(`${NAME}: every block ran (${blocks.length} blocks)`);
}

await main();
