import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { WorkerClient } from "../../src/rpc";
import { mixedCall } from "../../test/support/soak-mix";
import { emptyTally, summary } from "../../test/support/soak-tally";
import { type CallRecord, keepCalling } from "./soak-lanes";
import type { PartContext } from "./soak-plan";
import type { DrainCounts, DrainResult } from "./soak-results";
import { type Exit, exited, startSoakWorker } from "./soak-worker";

/** A worker that has not exited this long after its grace period is past due: the part ends. */
const EXIT_SLACK_S = 30;

/**
 * Part 4: SIGTERM with 64 calls in flight. The worker drains (python/colocated_wire/worker/
 * main.py): every call it had accepted is answered within --grace-period, new calls are
 * refused with UNAVAILABLE, and it exits 0. Calls keep coming until just after it has exited.
 */
export async function runDrain(context: PartContext): Promise<DrainResult> {
  const { root, plan } = context;
  const { warmS, graceS, afterExitS } = plan.drain;
  const worker = await startSoakWorker(root, {
    maxConcurrentCalls: plan.inFlight,
    gracePeriodS: graceS,
  });
  try {
    const client = await WorkerClient.connect(worker.target, { deadlineMs: plan.hang.deadlineMs });
    try {
      const tally = emptyTally();
      const sides = { before: counts(), inFlight: counts(), after: counts() };
      let sigtermAt: number | undefined;
      let exit: (Exit & { at: number }) | undefined;
      const stop = new AbortController();
      void exited(worker.process).then(async (e) => {
        exit = { ...e, at: performance.now() };
        await sleep(afterExitS * 1000); // calls a moment longer: refused, as none listens
        stop.abort();
      });
      context.status(() => `4 drain${sigtermAt ? " (SIGTERM sent)" : ""}: ${summary(tally)}`);
      const onEnd = (call: CallRecord) => {
        const side =
          sigtermAt === undefined || call.endedAt < sigtermAt
            ? sides.before
            : call.startedAt < sigtermAt
              ? sides.inFlight
              : sides.after;
        countDrain(side, call, side === sides.after);
      };
      const started = performance.now();
      const maxS = warmS + graceS + EXIT_SLACK_S;
      const maxCalls = maxS * plan.maxCallsPerSecond;
      const lanes = keepCalling({
        inFlight: plan.inFlight,
        untilMs: started + maxS * 1000,
        maxCalls,
        stop: stop.signal,
        hang: plan.hang,
        tally,
        onEnd,
        call: (n, signal) => mixedCall(client, n, { deadlineMs: plan.hang.deadlineMs, signal }),
      });
      await sleep(warmS * 1000);
      sigtermAt = performance.now();
      worker.process.kill("SIGTERM");
      const { endedBy } = await lanes;
      stop.abort();
      return {
        seconds: (performance.now() - started) / 1000,
        inFlight: plan.inFlight,
        hang: plan.hang,
        endedBy,
        maxCalls,
        tally,
        graceS,
        sigtermAtS: (sigtermAt - started) / 1000,
        ...(exit
          ? {
              exitedAfterS: (exit.at - sigtermAt) / 1000,
              exit: { code: exit.code, signal: exit.signal },
            }
          : {}),
        beforeSigterm: sides.before,
        inFlightAtSigterm: sides.inFlight,
        afterSigterm: sides.after,
      };
    } finally {
      client.close();
    }
  } finally {
    await worker.stop(); // at once if it has exited; SIGTERM, then SIGKILL, if it has not
  }
}

function counts(): DrainCounts {
  return {
    started: 0,
    answered: 0,
    refusedDraining: 0,
    refusedStopping: 0,
    refusedNotListening: 0,
    lost: 0,
    hung: 0,
    wrong: 0,
  };
}

/** The worker's refusal while it drains (worker/limits.py). */
const DRAINING = /shutting down/;
/** grpcio's server.stop, to a call that arrives as it stops (status and details both CANCELLED). */
const STOPPING = /^CANCELLED$/;
/** grpc-js when nothing listens: the call never reached a worker. */
const NOT_LISTENING = /No connection established|ECONNREFUSED/;

/** Counts a call by what became of it; any failure but a refusal may have lost an accepted call. */
function countDrain(into: DrainCounts, call: CallRecord, afterSigterm: boolean): void {
  into.started++;
  const { outcome } = call;
  if (outcome.kind === "answered") into.answered++;
  else if (outcome.kind === "hung") into.hung++;
  else if (outcome.kind === "wrong") into.wrong++;
  else if (outcome.code === "UNAVAILABLE" && DRAINING.test(outcome.message)) into.refusedDraining++;
  else if (outcome.code === "UNAVAILABLE" && NOT_LISTENING.test(outcome.message))
    into.refusedNotListening++;
  else if (outcome.code === "CANCELLED" && STOPPING.test(outcome.message) && afterSigterm)
    into.refusedStopping++;
  else into.lost++;
}
