import type { HangRule, Tally } from "../../test/support/soak-tally";
import type { EndedBy } from "./soak-lanes";
import type { MemorySample } from "./soak-memory";
import type { SoakPlan } from "./soak-plan";
import type { FaultCounts, FaultPlan } from "./soak-proxy";
import type { MemoryTrend } from "./soak-trend";
import type { Exit } from "./soak-worker";

/** What the soak writes to soak.json: every part's counts, its details, and the targets. */

/** What every part reports. */
export interface PartResult {
  /** How long its calls ran, from the first start to the last end. */
  seconds: number;
  inFlight: number;
  hang: HangRule;
  /** Why it stopped starting calls, and the count it would have stopped at. */
  endedBy: EndedBy;
  maxCalls: number;
  tally: Tally;
}

/** One memory figure over part 1: where it comes from and how it moved after warm-up. */
export interface MemoryFigure {
  name: string;
  source: string;
  trend?: MemoryTrend;
}

/** Part 1: calls in flight against one worker, and memory meanwhile. */
export interface SteadyResult extends PartResult {
  memory: {
    everyS: number;
    warmUpS: number;
    /** Whether the client's heap was read after a full GC (node --expose-gc). */
    gcExposed: boolean;
    /** Where the worker served metrics, if it had --metrics-port. */
    metricsUrl?: string;
    figures: MemoryFigure[];
    samples: MemorySample[];
  };
}

/** One SIGKILL of part 2, and how soon calls were answered again (seconds from the kill). */
export interface Restart {
  killedAtS: number;
  servingAfterS?: number;
  firstAnswerAfterS?: number;
  /** Calls answered that started once the new worker served: the client came back. */
  answeredAfter: number;
}

/** Part 2: the same calls while the worker is killed and started again on its port. */
export interface RestartsResult extends PartResult {
  everyS: number;
  restarts: Restart[];
  /** Calls in flight at a kill, started while the worker was down, started once it served
   * again but before the client's first answer from it (reconnecting), and the rest. */
  inFlightAtKill: Tally;
  whileDown: Tally;
  reconnecting: Tally;
  whileUp: Tally;
  /** LoadProgram calls the client made: twice at first, and again after NOT_FOUND. */
  programLoads: number;
}

/** Part 3: calls through a proxy that cuts and stalls connections. */
export interface FaultsResult extends PartResult {
  plan: FaultPlan;
  proxy: FaultCounts;
  connectAttempts: number;
}

/** The calls of part 4 on one side of the SIGTERM, by what became of them. */
export interface DrainCounts {
  started: number;
  answered: number;
  /** UNAVAILABLE from the draining worker: "shutting down and takes no new calls". */
  refusedDraining: number;
  /**
   * CANCELLED "CANCELLED": grpcio's server.stop cancels a call that reaches the server as it
   * stops, after the drain, before any handler of the worker sees it.
   */
  refusedStopping: number;
  /** UNAVAILABLE with no connection: the worker had stopped listening. */
  refusedNotListening: number;
  /** Any other end: a call the worker may have accepted and did not answer. */
  lost: number;
  hung: number;
  wrong: number;
}

/** Part 4: SIGTERM with calls in flight. */
export interface DrainResult extends PartResult {
  graceS: number;
  sigtermAtS?: number;
  /** Seconds from the SIGTERM to the exit, and how the process ended. */
  exitedAfterS?: number;
  exit?: Exit;
  beforeSigterm: DrainCounts;
  inFlightAtSigterm: DrainCounts;
  afterSigterm: DrainCounts;
}

/** One fault of part 5: a group call of block_until_released cancelled, or out of time. */
export interface GroupFault {
  kind: "cancel" | "deadline";
  /** When it was made, seconds into the part. */
  atS: number;
  /** The status it must end with. */
  expected: string;
  /** How it ended: its status, or answered, wrong, hung. */
  status?: string;
  message?: string;
  /** (cancel) Whether the function had blocked on every member when the call was cancelled. */
  blockedBeforeCancel?: boolean;
  /** The members (by position in the group) on which the function blocked. */
  blockedOn: number[];
  /** Seconds from its end until every blocked function was let go; absent if one never was. */
  releasedAfterS?: number;
  /** How the first group call started after that ended. */
  nextCall?: string;
}

/** Part 5: a WorkerGroup of real workers as one JAX job, with sessions, and plain calls beside. */
export interface GroupResult extends PartResult {
  workers: number;
  devicesPerWorker: number;
  /** Seconds to start the job's workers, and to form the group. */
  startS: number;
  formS: number;
  /** Each worker's GetVersion `sessions`, in the group's member order. */
  servesSessions: boolean[];
  /** The members that relayed the group's sessions, once formed (the part asks for one). */
  relays: number;
  /** Calls in flight of each plain client. */
  plainInFlight: number;
  shortDeadlineMs: number;
  /** The lanes' group calls (small and large); then by size. */
  group: Tally;
  small: Tally;
  large: Tally;
  /** The faults' group calls: each must fail with its status. */
  faultCalls: Tally;
  /** The plain clients' calls on each worker's own devices. */
  plain: Tally;
  /** The `release` calls that let the faults' blocked functions go. */
  releases: Tally;
  faults: GroupFault[];
  /** group.sessionCounts at the end: member calls over sessions, session streams opened. */
  sessions: { calls: number; streams: number };
  /** Functions that blocked and were never let go. */
  unreleased: number;
  /** Members that answered group.alive() at the end. */
  alive: number;
}

/** A target of the soak and whether this run met it. */
export interface SoakTarget {
  part: string;
  name: string;
  measured: string;
  limit: string;
  met: boolean;
}

export interface SoakResults {
  meta: {
    date: string;
    machine: string;
    versions: string;
    quick: boolean;
    seed: number;
    seconds: number;
    loadAverage: { before: number; after: number };
    plan: SoakPlan;
  };
  steady?: SteadyResult;
  restarts?: RestartsResult;
  faults?: FaultsResult;
  drain?: DrainResult;
  group?: GroupResult;
  /** Parts that could not run to their end (a worker that would not start ...), by part. */
  errors: Record<string, string>;
  targets: SoakTarget[];
}
