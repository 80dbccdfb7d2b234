import type { FixedRow } from "./group-fixed";

/** The controller's CPU per member per call for the small program, at most (µs). */
export const CPU_PER_MEMBER_US = 100;
/** How far apart that CPU may be, largest over smallest, from 16 members to 1,024. */
const FLAT = 1.5;
/** The controller's memory per member, at most. */
const MEMORY_PER_MEMBER = 256 * 1024;
/** Forming a group of 1,024, at most. */
const FORM_MS = 5_000;
/** A hanging member's call ends at its deadline, and within this much more (timer slack). */
const DEADLINE_SLACK = 0.1;

/** One target of the group bench: what was measured against the limit; `met` undefined when not measured. */
export interface GroupTarget {
  name: string;
  measured: string;
  limit: string;
  met: boolean | undefined;
}

const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;

/**
 * The group bench's targets, over the fixed-answer rows of two devices a member (the controller
 * alone, 16 to 1,024 members). A run that stopped short of 1,024 (--quick) checks the largest
 * it measured, and says so.
 */
export function groupTargets(fixed: readonly FixedRow[]): GroupTarget[] {
  const rows = fixed.filter((r) => r.devicesPerMember === 2).sort((a, b) => a.members - b.members);
  const largest = rows[rows.length - 1];
  if (largest === undefined) return [];
  const at = `${largest.members.toLocaleString("en-US")} members`;
  const perMember = rows.map((r) => r.small.cpuMs / r.members);
  const worst = Math.max(...perMember);
  const spread = worst / Math.min(...perMember);
  const range = `${rows[0].members} to ${largest.members.toLocaleString("en-US")}`;
  const failed = largest.failed.map((f) => {
    const named = f.named === f.member;
    const inTime = f.ms <= f.deadlineMs * (1 + DEADLINE_SLACK);
    const how = f.mode === "error" ? "fails at once" : "never answers";
    return {
      name: `a call in which one of ${at} ${how} ends within its deadline, naming it`,
      measured: `${f.ms.toFixed(0)} ms of ${f.deadlineMs} ms, named process ${f.named ?? "none"} (process ${f.member} failed)`,
      limit: `≤ deadline${f.mode === "hang" ? ` (+${DEADLINE_SLACK * 100}%)` : ""}, the right member`,
      met: named && inTime,
    };
  });
  return [
    {
      name: `controller CPU per member per call, small program (largest of ${range})`,
      measured: us(worst),
      limit: `≤ ${CPU_PER_MEMBER_US} µs`,
      met: worst * 1000 <= CPU_PER_MEMBER_US,
    },
    {
      name: `the same, largest over smallest, ${range} members`,
      measured: `${spread.toFixed(2)}×`,
      limit: `≤ ${FLAT}×`,
      met: spread <= FLAT,
    },
    {
      name: `controller memory per member (RSS), ${at}`,
      measured: kb(largest.rssPerMember),
      limit: `≤ ${kb(MEMORY_PER_MEMBER)}`,
      met: largest.rssPerMember <= MEMORY_PER_MEMBER,
    },
    {
      name: `forming a group of ${at}`,
      measured: `${(largest.formMs / 1000).toFixed(2)} s`,
      limit: `≤ ${FORM_MS / 1000} s`,
      met: largest.formMs <= FORM_MS,
    },
    ...failed,
  ];
}
