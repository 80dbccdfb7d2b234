import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * CPU time spent by the load bench's two sides, to say where a call's time goes: the server
 * process (from /proc, Linux only) and this process (the client). Wall-clock ratios say whether a
 * target is met; these say why.
 */

let ticksPerSecond: number | undefined;

/** CPU time (user + system, ms) a process has used so far; undefined without /proc. */
export function processCpuMs(pid: number): number | undefined {
  try {
    // Fields after the command name (which may hold spaces); utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }));
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** This process's CPU time so far (user + system, ms). */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
