import { failures, type Tally } from "../../test/support/soak-tally";
import type { GroupResult, SoakResults, SoakTarget } from "./soak-results";
import { EXPECTED_PROXY_STATUSES, EXPECTED_RESTART_STATUSES } from "./soak-statuses";

/**
 * The soak's targets: no call hangs in any part, and each part's own condition (every answer
 * right, calls answered again after each restart, only documented statuses through the
 * faults, every accepted call answered through a drain and an exit 0, a group's small calls
 * over its sessions and every call of it accounted for), and memory that grows at most
 * MEMORY_GROWTH_PERCENT after warm-up.
 */

export const MEMORY_GROWTH_PERCENT = 10;

const PARTS = ["steady", "restarts", "faults", "drain", "group"] as const;

/** Session streams a group member may open over the part: its first, and one more at most. */
export const MAX_STREAMS_PER_MEMBER = 2;

/** Every target of a run, met or not; a part that did not run misses its targets. */
export function soakTargets(r: Omit<SoakResults, "targets">): SoakTarget[] {
  const targets: SoakTarget[] = [];
  const add = (part: string, name: string, measured: string, limit: string, met: boolean) =>
    targets.push({ part, name, measured, limit, met });
  for (const part of PARTS) {
    if (r.errors[part])
      add(part, "part ran to its end", r.errors[part].split("\n")[0], "ran", false);
    const tally = r[part]?.tally;
    if (tally) add(part, "calls hung", String(tally.hung), "0", tally.hung === 0);
    if (tally) add(part, "wrong answers", String(tally.wrong), "0", tally.wrong === 0);
  }
  if (r.steady) {
    const t = r.steady.tally;
    add("steady", "calls failed", String(failures(t)), "0", failures(t) === 0);
    for (const figure of r.steady.memory.figures) {
      const growth = figure.trend?.growthPercent;
      const name = `${figure.name} growth after warm-up (${figure.source})`;
      const measured = growth === undefined ? "not measured" : `${growth.toFixed(1)}%`;
      const met = growth !== undefined && growth <= MEMORY_GROWTH_PERCENT;
      add("steady", name, measured, `≤ ${MEMORY_GROWTH_PERCENT}%`, met);
    }
  }
  if (r.restarts) {
    const back = r.restarts.restarts.filter((x) => x.answeredAfter > 0).length;
    const measured = `${back} of ${r.restarts.restarts.length}`;
    add(
      "restarts",
      "restarts after which calls were answered again",
      measured,
      "all",
      back === r.restarts.restarts.length && back > 0,
    );
    const odd = undocumented(r.restarts.tally, EXPECTED_RESTART_STATUSES);
    add(
      "restarts",
      "failures of an unexpected status",
      odd.join(", ") || "none",
      "none",
      odd.length === 0,
    );
  }
  if (r.faults) {
    const odd = undocumented(r.faults.tally, EXPECTED_PROXY_STATUSES);
    add(
      "faults",
      "failures of an undocumented status",
      odd.join(", ") || "none",
      "none",
      odd.length === 0,
    );
  }
  if (r.drain) {
    const d = r.drain;
    const lost = d.inFlightAtSigterm.lost + d.afterSigterm.lost;
    add("drain", "accepted calls not answered", String(lost), "0", lost === 0);
    const exit = d.exit ? (d.exit.signal ?? `exit ${d.exit.code}`) : "did not exit";
    add("drain", "worker's exit after SIGTERM", exit, "exit 0", d.exit?.code === 0);
  }
  if (r.group) groupTargets(r.group, add);
  // Each part's targets together, in the parts' order.
  return targets.sort((a, b) => order(a.part) - order(b.part));
}

/** Part 5's own targets (hung and wrong are every part's). */
function groupTargets(
  g: GroupResult,
  add: (part: string, name: string, measured: string, limit: string, met: boolean) => void,
): void {
  const t = g.tally;
  const ended = t.answered + t.wrong + failures(t) + t.hung;
  add(
    "group",
    "every call accounted for (started = answered + wrong + failed + hung)",
    `${t.started} started, ${ended} ended`,
    "equal",
    t.started === ended && t.started > 0,
  );
  add(
    "group",
    "group calls failed (faults aside)",
    String(failures(g.group)),
    "0",
    failures(g.group) === 0,
  );
  add("group", "plain calls failed", String(failures(g.plain)), "0", failures(g.plain) === 0);
  const members = g.workers;
  const small = g.small.answered;
  const serves = g.servesSessions.every(Boolean);
  const used = `${g.sessions.calls} member calls over sessions for ${small} small group calls answered${serves ? "" : ` (the workers' GetVersion says sessions: ${g.servesSessions.join(", ")})`}`;
  add(
    "group",
    "sessions used: every small call answered went over each member's session",
    used,
    `≥ ${members} per small call answered, > 0`,
    g.sessions.calls > 0 && g.sessions.calls >= members * small,
  );
  add(
    "group",
    "the members' sessions carried by the first member's relay",
    `${g.relays} relaying member${g.relays === 1 ? "" : "s"}`,
    "1",
    g.relays === 1,
  );
  // A large call over a session would push the count past every small call (and fault) sent.
  const sent = g.small.started + g.faultCalls.started;
  add(
    "group",
    "large calls answered, by ExecuteSharded (not over sessions)",
    `${g.large.answered} answered; ${g.sessions.calls} session calls for ${sent} small calls and faults made`,
    `> 0; session calls ≤ ${members} × ${sent}`,
    g.large.answered > 0 && g.sessions.calls <= members * sent,
  );
  add(
    "group",
    "session streams opened",
    `${g.sessions.streams} (${members} members)`,
    `1–${MAX_STREAMS_PER_MEMBER} per member`,
    g.sessions.streams >= members && g.sessions.streams <= MAX_STREAMS_PER_MEMBER * members,
  );
  const expected = g.faults.filter((f) => f.status === f.expected).length;
  add(
    "group",
    "faults that ended with their status (CANCELLED, DEADLINE_EXCEEDED)",
    `${expected} of ${g.faults.length}`,
    "all",
    expected === g.faults.length && expected > 0,
  );
  const next = g.faults.filter((f) => f.nextCall === "answered").length;
  add(
    "group",
    "faults after which the next group call was answered",
    `${next} of ${g.faults.length}`,
    "all",
    next === g.faults.length,
  );
  add("group", "blocked functions never let go", String(g.unreleased), "0", g.unreleased === 0);
  add("group", "members alive at the end", `${g.alive} of ${members}`, "all", g.alive === members);
}

function order(part: string): number {
  return PARTS.indexOf(part as (typeof PARTS)[number]);
}

/** The failure names of `tally` that are not in `expected`. */
function undocumented(tally: Tally, expected: readonly string[]): string[] {
  return Object.keys(tally.failed).filter((code) => !expected.includes(code));
}
