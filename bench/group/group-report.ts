import { readFileSync, writeFileSync } from "node:fs";
import type { GroupResults } from "./group";
import type { FixedRow } from "./group-fixed";
import type { CallCost } from "./group-timing";

const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(0));
const us = (v: number) => `${(v * 1000).toFixed(0)} µs`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
const count = (n: number) => n.toLocaleString("en-US");
/** A call's median time, and the controller's CPU per call and per member. */
const cost = (c: CallCost, members: number) =>
  `${ms(c.p50Ms)} | ${ms(c.cpuMs)} | ${us(c.cpuMs / members)}`;

function failedCell(row: FixedRow, mode: "error" | "hang"): string {
  const f = row.failed.find((x) => x.mode === mode);
  if (!f) return "n/a";
  const named = f.named === f.member ? "named" : `**named ${f.named ?? "none"}**`;
  return mode === "error"
    ? `${ms(f.ms)} ms, ${named}`
    : `${ms(f.ms)} of ${f.deadlineMs} ms, ${named}`;
}

/** The group bench's results as markdown: real workers, fixed-answer members, targets. */
export function groupMarkdown(r: GroupResults): string {
  const mib = (r.side * r.side * 4) / 2 ** 20;
  const load = r.meta.loadAverage;
  const lines = [
    `Run of ${r.meta.date} (${r.meta.machine}; load average ${load.before.toFixed(1)} before, ${load.after.toFixed(1)} after${r.meta.quick ? "; --quick" : ""}). Each job or group is measured from a controller process of its own. Calls one at a time; the small call's warm-up is at least 32,000 member calls over fixed-answer members and 4,000 over real workers (V8's compiler done with the call path), and it times at least 2,000 member calls; the array warms up on three calls over real workers and 4,000 member calls over fixed-answer ones. ms per call is the median, CPU is the controller process's (every thread) per call, the median of five batches' averages. Small: \`summarize\` on float32[4P, max(4, D)] over a P × D mesh (128 input bytes and five outputs a member up to four devices; its \`count_positive\` is a reduction across every process). Array: \`affine\` on a ${mib} MiB float32[${r.side}, ${r.side}] sharded over every device, each way. The plot: [group.svg](group.svg).`,
    "",
  ];
  if (r.real.length) {
    lines.push(
      "**Real workers**: one JAX job (jax.distributed, gloo on CPU) of P worker processes of D CPU devices each, on this machine, driven by one WorkerGroup. Forming: connect, negotiate one version, check the topology. With more processes than cores the workers share the CPU, so time per call grows with the processes here for reasons a real pod does not have; the controller's CPU is the figure that carries over. From 16 workers the sessions are carried by the first worker's Relay (a group's default); “a session each” is the small call with relays off (ms, CPU per member), and the relay's cost is the relaying worker's CPU per small call beyond the median other worker's, per member it carries.",
      "",
      `| workers × devices | forming ms | small ms | small CPU ms | CPU per member | relays | a session each: small ms, CPU per member | relay's CPU per member | ${mib} MiB ms | ${mib} MiB CPU ms | CPU per member |`,
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...r.real.map(
        (row) =>
          `| ${row.workers} × ${row.devicesPerWorker} | ${ms(row.formMs)} | ${cost(row.small, row.workers)} | ${row.relays || "—"} | ${row.direct ? `${ms(row.direct.p50Ms)}, ${us(row.direct.cpuMs / row.workers)}` : "—"} | ${row.relayCpuMsPerMember === undefined ? "—" : us(row.relayCpuMsPerMember)} | ${cost(row.array, row.workers)} |`,
      ),
      ...(r.direct
        ? [
            `| 1 × ${r.direct.devices}, WorkerClient (no group) | | ${cost(r.direct.small, 1)} | | | | ${cost(r.direct.array, 1)} |`,
          ]
        : []),
      "",
    );
  }
  if (r.fixed.length) {
    lines.push(
      "**Fixed-answer servers** (the controller alone): each member a real gRPC server of ColocatedWorkerService on a port of its own, in Node processes apart from the controller (128 members a process: this machine cannot hold 1,024 processes), answering from a fixed topology of D devices a member with output specs and shards of the right shapes and bytes, running nothing (test/support/group-fixed-service.ts). Each group is measured in a controller process of its own, started for it. A call of at most 1 MiB a member goes to each as one message on the member's Session, and is answered in one (both the small call and, from 16 members, the array). From 16 members the sessions are carried by relays, as a WorkerGroup does by default: the first of each run of max(16, ⌈√N⌉) members keeps a Relay stream from the controller and carries its run's sessions (a fixed-answer relay answers for its run as they would, in its own process, where a worker's relay forwards each message to them: what the controller sends and receives is the same, and the relaying member's work is not the controller's); “a session each” is the small call with relays off, a session from the controller to every member. A stream per call is the small call with sessions off, an ExecuteSharded stream per member per call, as before sessions. Bare HTTP/2: the small call's request bytes and answers over one node:http2 stream per member per call, with no gRPC library and no checks: the floor of a stream per call. Memory: the controller process's growth per member from before connecting to after the calls, RSS and V8 heap plus external (from 256 members: below, the growth is within the heap's own noise). One member fails: at once (INTERNAL, deadline 30 s), or never answers (deadline four times the median call).",
      "",
      `| members × devices | server processes | forming ms | small ms | small CPU ms | CPU per member | relays | a session each, per member | a stream per call, per member | bare HTTP/2 per member | ${mib} MiB ms | ${mib} MiB CPU ms | CPU per member | memory per member, RSS / heap | one fails at once | one never answers |`,
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...r.fixed.map(
        (row) =>
          `| ${count(row.members)} × ${row.devicesPerMember} | ${row.serverProcesses} | ${ms(row.formMs)} | ${cost(row.small, row.members)} | ${row.relays || "—"} | ${us(row.direct.cpuMs / row.members)} | ${us(row.streams.cpuMs / row.members)} | ${us(row.floor.cpuMs / row.members)} | ${cost(row.array, row.members)} | ${row.members < 256 ? "—" : `${kb(row.rssPerMember)} / ${kb(row.heapPerMember)}`} | ${failedCell(row, "error")} | ${failedCell(row, "hang")} |`,
      ),
      "",
    );
  }
  if (r.targets.length) {
    lines.push(
      "| group target (fixed-answer, 2 devices a member) | measured | limit | met |",
      "| --- | --- | --- | --- |",
      ...r.targets.map(
        (t) =>
          `| ${t.name} | ${t.measured} | ${t.limit} | ${t.met === undefined ? "not measured" : t.met ? "yes" : "**no**"} |`,
      ),
    );
  }
  return lines.join("\n");
}

const START = "<!-- group-bench:start -->";
const END = "<!-- group-bench:end -->";

/** docs/multi-worker.md's lines on a full run: the cost per member, and where the figures are. */
function readmeSummary(r: GroupResults): string {
  const two = r.fixed.filter((f) => f.devicesPerMember === 2);
  const [small, large] = [two[0], two[two.length - 1]];
  const real = r.real.filter((x) => x.devicesPerWorker === 2);
  const biggest = real[real.length - 1];
  const perMember = (f: FixedRow) => us(f.small.cpuMs / f.members);
  const parts = [
    `Measured ${r.meta.date.slice(0, 10)} on ${r.meta.machine}.`,
    small && large
      ? `The controller's CPU for a small call is ${perMember(small)} a member at ${count(small.members)} members and ${perMember(large)} at ${count(large.members)} (fixed-answer servers, each call one message each way on the member's Session, carried by ${large.relays} relaying members; with a session from the controller to each member it is ${us(large.direct.cpuMs / large.members)}, with a stream per member per call ${us(large.streams.cpuMs / large.members)}, and bare HTTP/2 streams alone take ${us(large.floor.cpuMs / large.members)}), its memory ${kb(large.rssPerMember)} a member, and a group of ${count(large.members)} forms in ${(large.formMs / 1000).toFixed(1)} s.`
      : "",
    biggest
      ? `Over ${biggest.workers} real workers of one JAX job, a small call costs the controller ${us(biggest.small.cpuMs / biggest.workers)} a member (their answers arrive one message at a time).`
      : "",
    "The scaling table and targets: [bench/group/group.md](../bench/group/group.md); the plot:",
  ];
  return `${parts.filter(Boolean).join(" ")}\n\n![Time per call and controller CPU per member against the member count, real workers and fixed-answer servers](../bench/group/group.svg)`;
}

/** Replaces docs/multi-worker.md's group section (between its markers) with a full run's summary. */
export function updateGroupReadme(readme: string, r: GroupResults): void {
  const text = readFileSync(readme, "utf8");
  const [a, b] = [text.indexOf(START), text.indexOf(END)];
  if (a < 0 || b < a) throw new Error(`${readme} has no ${START} ... ${END} section`);
  writeFileSync(readme, `${text.slice(0, a)}${START}\n${readmeSummary(r)}\n${text.slice(b)}`);
}
