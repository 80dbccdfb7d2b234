import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { stopProcess } from "../../src/cli/worker-process";
import {
  FixedJob,
  type FixedMode,
  type FixedOptions,
  startFixedServers,
} from "../../test/support/group-fixed-service";

/**
 * Fixed-answer members in processes of their own, apart from the controller (the group bench's
 * part beyond real workers): a job of 1,024 members is more processes than this machine holds,
 * so each process serves many members, each a gRPC server on a port of its own
 * (test/support/group-fixed-service.ts). `node dist/bench/group/group-fixed-servers.js --processes N
 * --devices D --first A --count K --sessions true|false` serves members A to A + K - 1 (with
 * Session or without) and prints `serving` and their targets as JSON; a line `mode P
 * ok|error|hang` on its stdin sets member P's mode, answered by the same line once set.
 */

/** Members per server process: the fewer processes, the less memory; two or more use both cores. */
export const MEMBERS_PER_PROCESS = 128;

/** The fixed-answer members of one job, where they serve, and how to steer and stop them. */
export interface FixedMembers {
  /** Member p's target, by process index. */
  targets: string[];
  /** How many server processes hold them. */
  processes: number;
  /** Sets member p's mode for its next calls; resolves once its process has set it. */
  setMode(member: number, mode: FixedMode): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `processes` fixed-answer members of `devices` devices each, MEMBERS_PER_PROCESS a process. */
export async function startFixedMembers(
  processes: number,
  devices: number,
  options: FixedOptions = {},
): Promise<FixedMembers> {
  const hosts: { child: ChildProcess; first: number; lines: AsyncIterator<string> }[] = [];
  const stop = () => Promise.all(hosts.map((h) => stopProcess(h.child, 2_000))).then(() => {});
  try {
    const started = [];
    for (let first = 0; first < processes; first += MEMBERS_PER_PROCESS) {
      const count = Math.min(MEMBERS_PER_PROCESS, processes - first);
      const args = [__filename, "--processes", String(processes), "--devices", String(devices)];
      args.push("--sessions", String(options.sessions ?? true));
      const child = spawn(
        process.execPath,
        [...args, "--first", String(first), "--count", String(count)],
        {
          stdio: ["pipe", "pipe", "inherit"],
        },
      );
      const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[
        Symbol.asyncIterator
      ]();
      hosts.push({ child, first, lines });
      started.push(
        lines.next().then(({ value }) => {
          const found = /^serving (.*)$/.exec(value ?? "");
          if (!found)
            throw new Error(`a fixed-answer server process said ${JSON.stringify(value)}`);
          return JSON.parse(found[1]) as string[];
        }),
      );
    }
    const targets = (await Promise.all(started)).flat();
    const setMode = async (member: number, mode: FixedMode) => {
      const host = hosts[Math.floor(member / MEMBERS_PER_PROCESS)];
      host.child.stdin?.write(`mode ${member} ${mode}\n`);
      const { value } = await host.lines.next();
      if (value !== `mode ${member} ${mode}`) throw new Error(`no mode set: ${value}`);
    };
    return { targets, processes: hosts.length, setMode, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A server process: its members' servers, then their modes as its stdin sets them. */
async function serve(argv: string[]): Promise<void> {
  const flag = (name: string) => Number(argv[argv.indexOf(name) + 1]);
  const job = new FixedJob(flag("--processes"), flag("--devices"));
  const first = flag("--first");
  const members = Array.from({ length: flag("--count") }, (_, i) => first + i);
  const sessions = !argv.includes("--sessions") || argv[argv.indexOf("--sessions") + 1] !== "false";
  const servers = await startFixedServers(job, members, { sessions });
  process.stdout.write(`serving ${JSON.stringify(servers.map((s) => s.target))}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    const [verb, member, mode] = line.split(" ");
    if (verb === "mode") {
      job.setMode(Number(member), mode as FixedMode);
      process.stdout.write(`${line}\n`);
    }
  }
  process.exit(0); // the controller closed stdin: it is done
}

if (require.main === module) {
  process.on("SIGTERM", () => process.exit(0));
  serve(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
