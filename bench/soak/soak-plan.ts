import type { HangRule } from "../../test/support/soak-tally";
import type { FaultPlan } from "./soak-proxy";

/**
 * How long and how hard each part of the soak runs (`npm run soak`, bench/soak/soak.ts): the full
 * run, and a quick one of about two and a half minutes. Every part is bounded in time and in calls.
 */

export interface SoakPlan {
  quick: boolean;
  /** Calls in flight in every part, and the worker's --max-concurrent-calls. */
  inFlight: number;
  /** A part stops starting calls after seconds × this, if its time has not run out first. */
  maxCallsPerSecond: number;
  /** Deadline of each call, and how much longer a call may take before it counts as hung. */
  hang: HangRule;
  steady: {
    seconds: number;
    sampleEveryS: number;
    /** The first part of the run that memory figures leave out. */
    warmUpFraction: number;
  };
  restarts: { everyS: number; restarts: number };
  faults: {
    seconds: number;
    /** Shorter than the others: a call that stalls goes past it, which is one of the faults. */
    hang: HangRule;
    proxy: Omit<FaultPlan, "seed">;
  };
  drain: {
    /** Calls run this long before the SIGTERM. */
    warmS: number;
    /** --grace-period: long enough for every call in flight to finish. */
    graceS: number;
    /** Calls keep coming this long after the worker has exited (refused: none listens). */
    afterExitS: number;
  };
  group: {
    /** How long the calls run, once the job of 2 workers has formed. */
    seconds: number;
    /** Calls in flight of each worker's plain client, beside the group's. */
    plainInFlight: number;
    /** Faults (a call cancelled mid-flight, one out of time, in turn) spread over the part. */
    faults: number;
    /** The deadline of a fault's call that must run out of time. */
    shortDeadlineMs: number;
  };
}

/** What a part is given: the repository, the plan, the seed, and where to say how it goes. */
export interface PartContext {
  root: string;
  plan: SoakPlan;
  seed: number;
  /** Sets the line the progress bar shows while the part runs. */
  status(line: () => string): void;
}

const HANG: HangRule = { deadlineMs: 10_000, marginMs: 5_000 };

/** The proxy's faults: a cut every ~1 MiB, a 0–2 s stall every ~512 KiB each way. */
const PROXY: SoakPlan["faults"]["proxy"] = {
  meanBytesBeforeCut: 1 << 20,
  meanBytesBetweenStalls: 512 << 10,
  maxStallMs: 2_000,
};

/** The plan of a full run (about 13 minutes) or a quick one (about 2.5 minutes). */
export function soakPlan(quick: boolean): SoakPlan {
  return {
    quick,
    inFlight: 64,
    maxCallsPerSecond: 2_000,
    hang: HANG,
    steady: { seconds: quick ? 30 : 300, sampleEveryS: quick ? 2 : 5, warmUpFraction: 0.2 },
    restarts: quick ? { everyS: 10, restarts: 2 } : { everyS: 30, restarts: 5 },
    faults: {
      seconds: quick ? 30 : 120,
      hang: { deadlineMs: 3_000, marginMs: 5_000 },
      proxy: PROXY,
    },
    drain: { warmS: quick ? 3 : 10, graceS: 60, afterExitS: 1 },
    group: {
      seconds: quick ? 30 : 125,
      plainInFlight: 4,
      faults: quick ? 2 : 6,
      shortDeadlineMs: 1_000,
    },
  };
}

/** Seconds the plan's parts take, without starting workers: the progress bar's total. */
export function plannedSeconds(plan: SoakPlan): number {
  const startups = 4 * 8 + plan.restarts.restarts * 8 + 15; // the group's job of 2: 15 s
  const restarts = plan.restarts.everyS * (plan.restarts.restarts + 1);
  const calls = plan.steady.seconds + restarts + plan.faults.seconds + plan.group.seconds;
  return startups + calls + plan.drain.warmS + 5;
}
