import { failures, type Tally } from "../../test/support/soak-tally";
import type {
  DrainCounts,
  DrainResult,
  FaultsResult,
  GroupResult,
  PartResult,
  RestartsResult,
  SoakResults,
  SteadyResult,
} from "./soak-results";
import { EXPECTED_FAULT_STATUSES } from "./soak-statuses";

/** The soak's results as markdown (soak.md): a summary, each part, the targets. */

const n = (v: number) => v.toLocaleString("en-US");
const s1 = (v: number | undefined) => (v === undefined ? "—" : `${v.toFixed(1)} s`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** "UNAVAILABLE 12, DEADLINE_EXCEEDED 3", or "none". */
function byCode(tally: Tally): string {
  const codes = Object.entries(tally.failed).sort((a, b) => b[1] - a[1]);
  return codes.map(([code, count]) => `${code} ${n(count)}`).join(", ") || "none";
}

function tallyRow(what: string, t: Tally): string {
  return `| ${what} | ${n(t.started)} | ${n(t.answered)} | ${n(t.wrong)} | ${n(failures(t))}: ${byCode(t)} | ${n(t.hung)} |`;
}

const TALLY_HEAD = [
  "| calls | started | answered (checked) | wrong | failed, by status | hung |",
  "| --- | --- | --- | --- | --- | --- |",
];

function howLong(p: PartResult): string {
  const ended = p.endedBy === "count" ? `its bound of ${n(p.maxCalls)} calls` : p.endedBy;
  return `${p.inFlight} calls in flight for ${p.seconds.toFixed(0)} s (ended by ${ended}); each call's deadline ${p.hang.deadlineMs / 1000} s, hung if it has no answer or status ${p.hang.marginMs / 1000} s after it (a timer of the soak's own). ${n(Math.round(p.tally.answered / p.seconds))} answers/s.`;
}

/** Failure messages seen, one line each, to tell what each status stood for. */
function examples(t: Tally): string[] {
  const lines = Object.entries(t.examples).flatMap(([code, texts]) =>
    texts.map((text) => `- ${code}: ${text.replace(/\s+/g, " ").slice(0, 300)}`),
  );
  return lines.length ? ["", "Messages seen (up to four of each kind):", "", ...lines] : [];
}

function steadyMarkdown(r: SteadyResult): string[] {
  const m = r.memory;
  return [
    "## 1. Steady: calls in flight against one worker",
    "",
    `\`colocated_wire.examples.affine\` over the 2x4 mesh of 8 devices (x float32[8, 256]), \`summarize\` over the same mesh and \`affine\` on one device in turn, every answer checked against values computed in TypeScript, against a worker with its default flags and \`--max-concurrent-calls ${r.inFlight}\`${m.metricsUrl ? " (and `--metrics-port 0`, to read its resident size there too)" : ""}. ${howLong(r)}`,
    "",
    ...TALLY_HEAD,
    tallyRow("all", r.tally),
    ...examples(r.tally),
    "",
    `Memory, sampled every ${m.everyS} s (${m.samples.length} samples); the first ${m.warmUpS.toFixed(0)} s (20% of the part) are warm-up and left out. Growth is a least-squares line of the figure against calls ended: its slope per 10,000 calls, and its rise over the part after warm-up as % of its value at the end of warm-up; "measured" is last against first sample.${m.gcExposed ? "" : " The client's heap was read without a GC first: Node ran without --expose-gc, so it includes garbage."}`,
    "",
    "| figure | source | after warm-up → last | per 10,000 calls | growth | measured growth |",
    "| --- | --- | --- | --- | --- | --- |",
    ...m.figures.map((f) => {
      const t = f.trend;
      if (!t) return `| ${f.name} | ${f.source} | not measured | | | |`;
      return `| ${f.name} | ${f.source} | ${mib(t.firstBytes)} → ${mib(t.lastBytes)} | ${t.bytesPer10kCalls >= 0 ? "+" : ""}${(t.bytesPer10kCalls / 2 ** 10).toFixed(0)} KiB | ${t.growthPercent.toFixed(1)}% | ${t.measuredGrowthPercent.toFixed(1)}% |`;
    }),
  ];
}

function restartsMarkdown(r: RestartsResult): string[] {
  return [
    "## 2. Restarts: the worker killed (SIGKILL) and started again on its port",
    "",
    `The same calls; every ${r.everyS} s the worker is killed with SIGKILL (no drain) and a new one started on the same port. ${howLong(r)} The client was not told: its channel reconnects by itself, and its programs are loaded again when the new worker answers their handles with NOT_FOUND (${r.programLoads} LoadProgram calls in all). A lane whose call failed waits 50 ms, doubling up to 1 s, before its next.`,
    "",
    "Seconds from each kill: until the new worker said where it listens, and until the client's first answer from it; the gap between the two is the client's channel reconnecting (grpc-js retries a connection on its backoff: 1 s, then ×1.6 with jitter, and a call without waitForReady fails at once with UNAVAILABLE meanwhile).",
    "",
    "| restart | killed at | serving again after | first answer after | reconnect gap | answered since |",
    "| --- | --- | --- | --- | --- | --- |",
    ...r.restarts.map((x, i) => {
      const gap =
        x.servingAfterS === undefined || x.firstAnswerAfterS === undefined
          ? undefined
          : x.firstAnswerAfterS - x.servingAfterS;
      return `| ${i + 1} | ${s1(x.killedAtS)} | ${s1(x.servingAfterS)} | ${s1(x.firstAnswerAfterS)} | ${s1(gap)} | ${n(x.answeredAfter)} |`;
    }),
    "",
    ...TALLY_HEAD,
    tallyRow("in flight at a kill", r.inFlightAtKill),
    tallyRow("started while the worker was down", r.whileDown),
    tallyRow("started once it served again, before the first answer", r.reconnecting),
    tallyRow("started while it served and the client was connected", r.whileUp),
    tallyRow("all", r.tally),
    ...examples(r.tally),
  ];
}

function faultsMarkdown(r: FaultsResult): string[] {
  const p = r.proxy;
  const plan = r.plan;
  const seen = Object.entries(r.tally.failed).sort((a, b) => b[1] - a[1]);
  return [
    "## 3. Faults: through a proxy that cuts and stalls connections",
    "",
    `The same calls through a TCP proxy on 127.0.0.1 (bench/soak/soak-proxy.ts), seed ${plan.seed}: every connection is cut (closed or reset, half and half) after a random number of bytes (exponential, mean ${mib(plan.meanBytesBeforeCut)}, both ways together), and each direction stops reading for a uniform 0–${plan.maxStallMs / 1000} s after every uniform 0–${mib(2 * plan.meanBytesBetweenStalls)}. Every choice comes from the seed, the connection's number and the bytes seen, so a run with the same seed meets the same plan on every connection; when the faults strike in time still differs. ${howLong(r)}`,
    "",
    `The proxy: ${n(p.connections)} connections, ${n(p.closed)} closed and ${n(p.reset)} reset, ${n(p.stalls)} stalls (${(p.stalledMs / 1000).toFixed(0)} s in all), ${mib(p.bytes)} forwarded; the client connected at attempt ${r.connectAttempts}.`,
    "",
    ...TALLY_HEAD,
    tallyRow("all", r.tally),
    "",
    "| status | calls | why it is expected |",
    "| --- | --- | --- |",
    ...seen.map(
      ([code, count]) =>
        `| ${code} | ${n(count)} | ${EXPECTED_FAULT_STATUSES[code] ?? "**not documented: a finding**"} |`,
    ),
    ...examples(r.tally),
  ];
}

function drainRow(what: string, d: DrainCounts): string {
  return `| ${what} | ${n(d.started)} | ${n(d.answered)} | ${n(d.refusedDraining)} | ${n(d.refusedStopping)} | ${n(d.refusedNotListening)} | ${n(d.lost)} | ${n(d.wrong)} | ${n(d.hung)} |`;
}

function drainMarkdown(r: DrainResult): string[] {
  const exit = r.exit
    ? r.exit.signal
      ? `ended by ${r.exit.signal}`
      : `exited ${r.exit.code}`
    : "had not exited";
  return [
    "## 4. Drain: SIGTERM under load",
    "",
    `The same calls against a worker with \`--grace-period ${r.graceS}\`; SIGTERM at ${s1(r.sigtermAtS)}, and calls keep coming until just after the worker has exited. It ${exit}${r.exitedAfterS === undefined ? "" : ` ${r.exitedAfterS.toFixed(1)} s after the SIGTERM`}. A call the worker accepted must be answered; a new call is refused, in one of three ways as the worker goes: UNAVAILABLE "the worker is shutting down" from its drain; once every call has returned and it stops its gRPC server, CANCELLED "CANCELLED" from grpcio's \`server.stop\` for a call that reaches the server as it stops (before any handler of the worker sees it: a plain grpcio server stopped under load does the same); and UNAVAILABLE "No connection established" once nothing listens. Any other failure counts as lost.`,
    "",
    "| calls | started | answered | refused by the drain | refused as the server stops | refused, none listening | lost | wrong | hung |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    drainRow("ended before the SIGTERM", r.beforeSigterm),
    drainRow("in flight at the SIGTERM", r.inFlightAtSigterm),
    drainRow("started after it", r.afterSigterm),
    ...examples(r.tally),
  ];
}

function groupMarkdown(r: GroupResult): string[] {
  const s = r.sessions;
  const serves = r.servesSessions.every(Boolean)
    ? "every worker serves Session (its GetVersion says `sessions: true`)"
    : `**the workers' GetVersion says \`sessions: ${r.servesSessions.join(", ")}\`: the group called every member by ExecuteSharded**`;
  return [
    "## 5. Group: two workers as one JAX job, with sessions",
    "",
    `A JAX job (jax.distributed, gloo on CPU) of ${r.workers} worker processes of ${r.devicesPerWorker} CPU devices each (started in ${r.startS.toFixed(1)} s), driven by one WorkerGroup with sessions (formed in ${(r.formS * 1000).toFixed(0)} ms); ${serves}. ${howLong(r)} The group runs its calls one at a time, so they queue in it. Most are \`summarize\` on float32[8, 8] inputs over the whole job (a cross-process reduction among its outputs), sent as one message on each member's Session stream; one in 16 is \`affine\` on float32[1024, 1024] (2 MiB a member, past the 1 MiB of a session call: an ExecuteSharded stream per member). Meanwhile ${r.plainInFlight} calls in flight of a plain WorkerClient per worker run \`affine\` on that worker's own two devices, by Execute and ExecuteSharded in turn. Every input is drawn from the seed and the call's number, and every answer checked against values computed in TypeScript.`,
    "",
    `Faults: a few times a group call of \`block_until_released\` is cancelled with its AbortSignal once the function has blocked on every member, or made with a deadline of ${r.shortDeadlineMs / 1000} s it cannot meet; each must end with its status (CANCELLED, DEADLINE_EXCEEDED), never hang. The blocked functions are then let go by \`release\` on one device of their member (Execute; a call on one device takes no turn), and the next group call must be answered.`,
    "",
    `Sessions: ${n(s.calls)} member calls went over sessions, on ${s.streams} session streams in all (${(s.streams / r.workers).toFixed(1)} per member); ${r.alive} of ${r.workers} members answered at the end.`,
    "",
    ...TALLY_HEAD,
    tallyRow("group: small (summarize, over sessions)", r.small),
    tallyRow("group: large (affine, by ExecuteSharded)", r.large),
    tallyRow("group: faults (expected to fail)", r.faultCalls),
    tallyRow("plain: on each worker's own devices", r.plain),
    tallyRow("release calls", r.releases),
    tallyRow("all", r.tally),
    "",
    "| fault | kind | at | ended with | expected | blocked on members | let go after | next group call |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...r.faults.map(
      (f, i) =>
        `| ${i + 1} | ${f.kind === "cancel" ? `cancelled mid-flight${f.blockedBeforeCancel === false ? " (had not blocked everywhere)" : ""}` : `deadline ${r.shortDeadlineMs} ms`} | ${s1(f.atS)} | ${f.status ?? "—"} | ${f.expected} | ${f.blockedOn.join(", ") || "none"} | ${s1(f.releasedAfterS)} | ${f.nextCall ?? "—"} |`,
    ),
    ...examples(r.tally),
  ];
}

/** The whole report. */
export function soakMarkdown(r: SoakResults): string {
  const m = r.meta;
  const parts: [string, PartResult | undefined][] = [
    ["1 steady", r.steady],
    ["2 restarts", r.restarts],
    ["3 faults", r.faults],
    ["4 drain", r.drain],
    ["5 group", r.group],
  ];
  const lines = [
    `Run of ${m.date} (${m.machine}; ${m.versions}; load average ${m.loadAverage.before.toFixed(1)} before, ${m.loadAverage.after.toFixed(1)} after; ${m.seconds} s)${m.quick ? ", **--quick**" : ""}, seed ${m.seed}. Every worker is a real \`python -m colocated_wire.worker\` on 127.0.0.1.`,
    "",
    "| part | seconds | started | answered | wrong | failed, by status | hung |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...parts.map(([name, p]) =>
      p
        ? `| ${name} | ${p.seconds.toFixed(0)} | ${n(p.tally.started)} | ${n(p.tally.answered)} | ${n(p.tally.wrong)} | ${byCode(p.tally)} | ${n(p.tally.hung)} |`
        : `| ${name} | did not run${r.errors[name.split(" ")[1]] ? `: ${r.errors[name.split(" ")[1]].split("\n")[0]}` : ""} | | | | | |`,
    ),
    "",
    ...(r.steady ? [...steadyMarkdown(r.steady), ""] : []),
    ...(r.restarts ? [...restartsMarkdown(r.restarts), ""] : []),
    ...(r.faults ? [...faultsMarkdown(r.faults), ""] : []),
    ...(r.drain ? [...drainMarkdown(r.drain), ""] : []),
    ...(r.group ? [...groupMarkdown(r.group), ""] : []),
    "## Targets",
    "",
    "| part | target | measured | limit | met |",
    "| --- | --- | --- | --- | --- |",
    ...r.targets.map(
      (t) => `| ${t.part} | ${t.name} | ${t.measured} | ${t.limit} | ${t.met ? "yes" : "**no**"} |`,
    ),
  ];
  return lines.join("\n");
}
