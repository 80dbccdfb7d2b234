import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { WorkerProcess } from "../../src/cli/worker-process";
import { WorkerClient } from "../../src/rpc";
import { mixedCall } from "../../test/support/soak-mix";
import { count, emptyTally, summary, type Tally } from "../../test/support/soak-tally";
import { type CallRecord, keepCalling } from "./soak-lanes";
import type { PartContext } from "./soak-plan";
import type { Restart, RestartsResult } from "./soak-results";
import { killWorker, portOf, startSoakWorker } from "./soak-worker";

/**
 * Part 2: part 1's calls while the worker is killed (SIGKILL, no drain) and started again on
 * the same port every so often. Calls in flight at a kill fail with UNAVAILABLE; the client's
 * channel reconnects by itself once the new worker listens, and reloads its programs when the
 * new worker answers their handles with NOT_FOUND; later calls are answered again.
 */
export async function runRestarts(context: PartContext): Promise<RestartsResult> {
  const { root, plan } = context;
  const { everyS, restarts: restartCount } = plan.restarts;
  const flags = { maxConcurrentCalls: plan.inFlight };
  let worker: WorkerProcess = await startSoakWorker(root, flags);
  const port = portOf(worker.target);
  try {
    const client = await WorkerClient.connect(worker.target, { deadlineMs: plan.hang.deadlineMs });
    try {
      const restarts: (Restart & Moments)[] = [];
      const split = {
        inFlightAtKill: emptyTally(),
        whileDown: emptyTally(),
        reconnecting: emptyTally(),
        whileUp: emptyTally(),
      };
      const tally = emptyTally();
      const started = performance.now();
      const seconds = everyS * (restartCount + 1);
      const maxCalls = seconds * plan.maxCallsPerSecond;
      let restarting = "";
      context.status(
        () => `2 restarts (${restarts.length} of ${restartCount})${restarting}: ${summary(tally)}`,
      );
      const onEnd = (call: CallRecord) => {
        countInSlice(call, restarts, split);
        if (call.outcome.kind !== "answered") return;
        for (const r of restarts) {
          if (call.startedAt > r.killedAt && r.firstAnswerAt === undefined) {
            r.firstAnswerAt = call.endedAt;
            r.firstAnswerAfterS = (call.endedAt - r.killedAt) / 1000;
          }
          if (r.servingAt !== undefined && call.startedAt >= r.servingAt) r.answeredAfter++;
        }
      };
      const lanes = keepCalling({
        inFlight: plan.inFlight,
        untilMs: started + seconds * 1000,
        maxCalls,
        hang: plan.hang,
        tally,
        onEnd,
        call: (n, signal) => mixedCall(client, n, { deadlineMs: plan.hang.deadlineMs, signal }),
      });
      const killer = (async () => {
        for (let i = 1; i <= restartCount; i++) {
          await sleep(Math.max(0, started + i * everyS * 1000 - performance.now()));
          const killedAt = performance.now();
          const restart = { killedAt, killedAtS: (killedAt - started) / 1000, answeredAfter: 0 };
          restarts.push(restart);
          restarting = ", restarting";
          await killWorker(worker);
          worker = await startSoakWorker(root, { ...flags, port });
          restarting = "";
          const servingAt = performance.now();
          Object.assign(restart, { servingAt, servingAfterS: (servingAt - killedAt) / 1000 });
        }
      })();
      // Both end by themselves: the lanes by time or count, the killer after its last restart.
      // The lanes run to their end even if a restart fails, so that no call outlives the part.
      const [{ endedBy }] = await Promise.all([
        lanes,
        killer.catch(async (error) => {
          await lanes;
          throw error;
        }),
      ]);
      return {
        seconds: (performance.now() - started) / 1000,
        inFlight: plan.inFlight,
        hang: plan.hang,
        endedBy,
        maxCalls,
        tally,
        everyS,
        restarts: restarts.map(
          ({ killedAtS, servingAfterS, firstAnswerAfterS, answeredAfter }) => ({
            killedAtS,
            servingAfterS,
            firstAnswerAfterS,
            answeredAfter,
          }),
        ),
        ...split,
        programLoads: client.programLoads,
      };
    } finally {
      client.close();
    }
  } finally {
    await worker.stop();
  }
}

/** When a restart's kill, new worker and first answer came (performance.now() ms). */
interface Moments {
  killedAt: number;
  servingAt?: number;
  firstAnswerAt?: number;
}

/**
 * Counts the call into the slice it belongs to: in flight at a kill, started while the worker
 * was down, started once the new worker served but before the client's first answer from it
 * (its channel reconnecting), or started while all was well.
 */
function countInSlice(
  call: CallRecord,
  restarts: readonly Moments[],
  split: Record<"inFlightAtKill" | "whileDown" | "reconnecting" | "whileUp", Tally>,
): void {
  const { startedAt, endedAt } = call;
  const never = Number.POSITIVE_INFINITY;
  const atKill = restarts.some((r) => startedAt < r.killedAt && endedAt >= r.killedAt);
  const down = restarts.some((r) => startedAt >= r.killedAt && startedAt < (r.servingAt ?? never));
  const reconnecting = restarts.some(
    (r) => startedAt >= (r.servingAt ?? never) && startedAt < (r.firstAnswerAt ?? never),
  );
  const slice = atKill
    ? split.inFlightAtKill
    : down
      ? split.whileDown
      : reconnecting
        ? split.reconnecting
        : split.whileUp;
  slice.started++;
  count(slice, call.outcome);
}
