import type { ChildProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  ShapeDtypeStruct,
  SingleDeviceSharding,
} from "../../src";
import type { WorkerProcess } from "../../src/cli/worker-process";
import { callInputs, WorkerClient, WorkerGroup } from "../../src/rpc";
import { seededRandom } from "../../test/support/seeded-random";
import {
  addTally,
  count,
  emptyTally,
  type Outcome,
  summary,
  WrongAnswer,
  watchCall,
} from "../../test/support/soak-tally";
import { startJobWorkers } from "../group/group-job";
import { type CallRecord, keepCalling } from "./soak-lanes";
import type { PartContext } from "./soak-plan";
import { derivedSeed } from "./soak-random";
import type { GroupFault, GroupResult } from "./soak-results";

/**
 * Part 5: a WorkerGroup of real workers as one JAX job (jax.distributed, gloo on CPU), 2
 * processes of 2 CPU devices each, with sessions, both carried by the first member's Relay (as
 * a group of 16 or more carries them by default). The plan's calls in flight each loop on a
 * group call (they queue: the group runs its calls one at a time), mostly `summarize` on small
 * inputs (one message each way on each member's Session stream) and now and then `affine` on
 * more than 1 MiB a member (an ExecuteSharded stream per member); meanwhile one plain
 * WorkerClient per worker calls `affine` on that worker's own two devices (Execute and
 * ExecuteSharded in turn), so each worker's session runs next to other calls. A few times, a
 * group call of `block_until_released` is cancelled mid-flight (AbortSignal) or given a
 * deadline it cannot meet; each must end with its status, the blocked functions are let go
 * (`release`, on one device of the member), and the next group call must be answered. Every
 * answer is checked against values computed here.
 */

const EXAMPLES = "colocated_wire.examples";
/** The job: processes, and CPU devices each. */
const PROCESSES = 2;
const DEVICES = 2;
/** How long a worker of the job may take to say where it listens. */
const START_TIMEOUT_MS = 180_000;
/** The small call: summarize on float32[ROWS, COLS]. */
const ROWS = 8;
const COLS = 8;
/** The large call: affine on float32[SIDE, SIDE], 2 MiB a member (over SESSION_MAX_INPUT_BYTES). */
const SIDE = 1024;
/** One group call in LARGE_EVERY is the large one. */
const LARGE_EVERY = 16;
/** The plain calls: affine on float32[PLAIN_ROWS, PLAIN_COLS] over a worker's own devices. */
const PLAIN_ROWS = 8;
const PLAIN_COLS = 64;
/** What block_until_released says on stderr once it blocks. */
const BLOCKED = "block_until_released: blocked";
/**
 * How long a fault waits for the function to block on every member before it cancels anyway:
 * the call's own deadline (the plan's, 10 s) ends it first if its turn came and it did not.
 */
const BLOCK_WAIT_MS = 10_000;
/** How long a fault waits for its blocked functions to be let go. */
const RELEASE_WAIT_MS = 10_000;
/** How often blocked functions are looked for and let go. */
const SWEEP_MS = 100;

const f32 = (values: ArrayLike<number>) => new Uint8Array(Float32Array.from(values).buffer);
/** The float32 values of output bytes (copied when they are not 4-byte aligned). */
function floats(bytes: Uint8Array): Float32Array {
  const b = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}
/** Whole numbers in [-range, range] (and halves with `half`): every result below is exact. */
function values(random: () => number, length: number, range: number, half = false): Float32Array {
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    out[i] = Math.floor(random() * (2 * range + 1)) - range + (half ? 0.5 : 0);
  }
  return out;
}

/** The job's programs: the group's, each member's own, and each member's `release`. */
interface Programs {
  small: Program;
  large: Program;
  block: Program;
  /** affine over member i's own devices. */
  plain: Program[];
  /** release on member i's first device (one device: it takes no turn, device_turn.py). */
  release: Program[];
}

function programs(ids: readonly number[], own: readonly (readonly number[])[]): Programs {
  const mesh = new Mesh(new DeviceList([...ids]), [PROCESSES, ids.length / PROCESSES], ["x", "y"]);
  const on = (shape: number[], ...spec: (string | null)[]) =>
    new ShapeDtypeStruct(shape, "float32", new NamedSharding(mesh, new PartitionSpec(...spec)));
  const example = (name: string, devices: DeviceList, leaves: ShapeDtypeStruct[]): Program => ({
    function: new FunctionRef(EXAMPLES, name),
    inputs: callInputs(leaves),
    devices,
  });
  const plain = own.map((devices) => {
    const local = new Mesh(new DeviceList([...devices]), [devices.length], ["y"]);
    const at = (shape: number[], ...spec: (string | null)[]) =>
      new ShapeDtypeStruct(shape, "float32", new NamedSharding(local, new PartitionSpec(...spec)));
    return example("affine", local.devices, [
      at([PLAIN_ROWS, PLAIN_COLS], null, "y"),
      at([]),
      at([PLAIN_COLS], "y"),
    ]);
  });
  const release = own.map((devices) =>
    example("release", new DeviceList([devices[0]]), [
      new ShapeDtypeStruct([2], "float32", new SingleDeviceSharding(devices[0])),
    ]),
  );
  return {
    small: example("summarize", mesh.devices, [on([ROWS, COLS], "x", "y"), on([ROWS, COLS], "x")]),
    large: example("affine", mesh.devices, [on([SIDE, SIDE], "x", "y"), on([]), on([SIDE], "y")]),
    block: example("block_until_released", mesh.devices, [on([ROWS, COLS], "x", "y")]),
    plain,
    release,
  };
}

/** Checks affine's output: x * scale + shift, shift along the last axis of `cols`. */
function checkAffine(
  what: string,
  got: Float32Array,
  x: Float32Array,
  scale: number,
  shift: Float32Array,
): void {
  if (got.length !== x.length) throw new WrongAnswer(`${what}: ${got.length} elements`);
  const cols = shift.length;
  for (let i = 0; i < x.length; i++) {
    const want = x[i] * scale + shift[i % cols];
    if (got[i] !== want) throw new WrongAnswer(`${what}: element ${i} is ${got[i]}, not ${want}`);
  }
}

/** Checks summarize's five outputs (in key order: count_positive, doubled, positive, row_sums, sum). */
function checkSummarize(
  what: string,
  result: { outputs: { leaves: readonly { dtype: string }[] }; data: Uint8Array[] },
  x: Float32Array,
  y: Float32Array,
): void {
  const wrong = (detail: string) => new WrongAnswer(`${what}: ${detail}`);
  const dtypes = result.outputs.leaves.map((l) => l.dtype).join(",");
  if (dtypes !== "int32,float32,bool,float32,float32") throw wrong(`output dtypes ${dtypes}`);
  const [countBytes, doubledBytes, positive, rowSumsBytes, sumBytes] = result.data;
  const counted = new DataView(countBytes.buffer, countBytes.byteOffset, 4).getInt32(0, true);
  const positives = x.filter((v) => v > 0).length;
  if (counted !== positives) throw wrong(`count_positive is ${counted}, not ${positives}`);
  const expect = (name: string, got: ArrayLike<number>, want: (i: number) => number) => {
    if (got.length !== x.length) throw wrong(`${name} has ${got.length} elements`);
    for (let i = 0; i < x.length; i++) {
      if (got[i] !== want(i)) throw wrong(`${name}[${i}] is ${got[i]}, not ${want(i)}`);
    }
  };
  expect("doubled", floats(doubledBytes), (i) => x[i] * 2);
  expect("positive", positive, (i) => (x[i] > 0 ? 1 : 0));
  expect("sum", floats(sumBytes), (i) => x[i] + y[i]);
  const rowSums = floats(rowSumsBytes);
  if (rowSums.length !== ROWS) throw wrong(`row_sums has ${rowSums.length} elements`);
  for (let r = 0; r < ROWS; r++) {
    const want = x.slice(COLS * r, COLS * r + COLS).reduce((a, b) => a + b);
    if (rowSums[r] !== want) throw wrong(`row_sums[${r}] is ${rowSums[r]}, not ${want}`);
  }
}

/** The job's workers, and how often each said its function blocked. */
interface Job {
  workers: WorkerProcess[];
  blocked: { count: number }[];
  stop(): Promise<void>;
}

/** Starts the job's workers, counting BLOCKED on each one's stderr. */
async function startJob(root: string, maxConcurrentCalls: number): Promise<Job> {
  const flags = [
    ...["--host", "127.0.0.1", "--devices", String(DEVICES), "--allow-module", EXAMPLES],
    ...["--max-concurrent-calls", String(maxConcurrentCalls)],
  ];
  const { workers, stop } = await startJobWorkers(root, PROCESSES, flags, START_TIMEOUT_MS);
  return { workers, blocked: workers.map((w) => counter(w.process, BLOCKED)), stop };
}

/** Counts the times `text` appears on the process's stderr from now on. */
function counter(child: ChildProcess, text: string): { count: number } {
  const seen = { count: 0 };
  let tail = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    const more = tail + chunk.toString("utf8");
    for (let at = more.indexOf(text); at >= 0; at = more.indexOf(text, at + text.length)) {
      seen.count++;
    }
    tail = more.slice(Math.max(0, more.length - text.length + 1));
  });
  return seen;
}

/** Waits until `done()` or `ms` pass; whether it was done. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!done()) {
    if (performance.now() >= end) return false;
    await sleep(20);
  }
  return true;
}

export async function runGroup(context: PartContext): Promise<GroupResult> {
  const { root, plan, seed } = context;
  const g = plan.group;
  const hang = plan.hang;
  const begun = performance.now();
  const job = await startJob(root, plan.inFlight);
  const startS = (performance.now() - begun) / 1000;
  try {
    context.status(() => "5 group: forming the group");
    const formed = performance.now();
    const group = await WorkerGroup.connect(
      job.workers.map((w) => w.target),
      { deadlineMs: hang.deadlineMs, sessions: true, relayFanout: PROCESSES },
    );
    const formS = (performance.now() - formed) / 1000;
    const relays = group.relays;
    // One plain client per worker, in the group's member order.
    const clients: WorkerClient[] = [];
    try {
      for (const m of group.members) {
        clients.push(await WorkerClient.connect(m.target, { deadlineMs: hang.deadlineMs }));
      }
      const servesSessions = clients.map((c) => c.servesSessions);
      if (!servesSessions.every(Boolean)) {
        process.stderr.write(
          `\nsoak group: the workers' GetVersion says sessions: ${servesSessions.join(", ")}: the group calls every member by ExecuteSharded, and the target "sessions used" will fail\n`,
        );
      }
      const blockedOf = group.members.map(
        (m) => job.blocked[job.workers.findIndex((w) => w.target === m.target)],
      );
      const ids = group.topology.devices.map((d) => d.id);
      const own = group.members.map((m) => m.devices.map((d) => d.id));
      const p = programs(ids, own);

      const tallies = {
        small: emptyTally(),
        large: emptyTally(),
        faults: emptyTally(),
        plain: emptyTally(),
        releases: emptyTally(),
      };
      const groupTally = emptyTally(); // the lanes' calls, small and large, as they end
      const faults: (GroupFault & { releasedAt?: number })[] = [];

      // Blocked functions are let go by `release` on the member, unless a fault holds them.
      const released = group.members.map(() => 0);
      let hold = 0;
      const release = async (i: number) => {
        const x = Float32Array.of(i, -i);
        const outcome = await watchCall(
          async (signal) => {
            const { data } = await clients[i].execute(p.release[i], [f32(x)], {
              deadlineMs: hang.deadlineMs,
              signal,
            });
            const got = floats(data[0]);
            if (got.length !== 2 || got[0] !== x[0] || got[1] !== x[1])
              throw new WrongAnswer(
                `release on member ${i}: ${got.join(", ")}, not ${x.join(", ")}`,
              );
          },
          hang,
          () => tallies.releases.endedAfterHung++,
        );
        tallies.releases.started++;
        count(tallies.releases, outcome);
        if (outcome.kind === "answered") released[i]++;
      };
      const unreleased = () => blockedOf.some((b, i) => b.count > released[i]);
      const sweep = async () => {
        for (const [i, b] of blockedOf.entries()) {
          while (hold === 0 && b.count > released[i]) {
            const before = released[i];
            await release(i);
            if (released[i] === before) break; // failed: try again at the next sweep
          }
        }
      };
      const sweeping = new AbortController();
      const sweeper = (async () => {
        while (!sweeping.signal.aborted) {
          await sweep();
          await sleep(SWEEP_MS);
        }
      })();

      const started = performance.now();
      const untilMs = started + g.seconds * 1000;
      const maxCalls = g.seconds * plan.maxCallsPerSecond;
      const faultsDone = () => faults.filter((f) => f.status !== undefined).length;
      context.status(() => {
        const s = group.sessionCounts;
        return `5 group: ${summary(groupTally)}; plain ${summary(tallies.plain)}; faults ${faultsDone()} of ${g.faults}; ${s.calls} session calls, ${s.streams} streams`;
      });

      const onGroupEnd = (call: CallRecord) => {
        const bySize = isLarge(call.n) ? tallies.large : tallies.small;
        bySize.started++;
        count(bySize, call.outcome);
        for (const f of faults) {
          if (
            f.releasedAt !== undefined &&
            f.nextCall === undefined &&
            call.startedAt >= f.releasedAt
          ) {
            f.nextCall = outcomeName(call.outcome);
          }
        }
      };
      const groupLanes = keepCalling({
        inFlight: plan.inFlight,
        untilMs,
        maxCalls,
        hang,
        tally: groupTally,
        onEnd: onGroupEnd,
        call: (n, signal) => {
          const random = seededRandom(derivedSeed(seed, 5, 0, n));
          return isLarge(n)
            ? largeCall(group, p.large, n, random, { deadlineMs: hang.deadlineMs, signal })
            : smallCall(group, p.small, n, random, { deadlineMs: hang.deadlineMs, signal });
        },
      });
      const plainLanes = clients.map((client, i) =>
        keepCalling({
          inFlight: g.plainInFlight,
          untilMs,
          maxCalls,
          hang,
          tally: emptyTally(),
          onEnd: (call) => {
            tallies.plain.started++;
            count(tallies.plain, call.outcome);
          },
          call: (n, signal) =>
            plainCall(client, p.plain[i], n, seededRandom(derivedSeed(seed, 5, 1 + i, n)), {
              deadlineMs: hang.deadlineMs,
              signal,
            }),
        }),
      );

      const faulter = (async () => {
        for (let k = 0; k < g.faults; k++) {
          await sleep(
            Math.max(
              0,
              started + ((k + 1) / (g.faults + 1)) * g.seconds * 1000 - performance.now(),
            ),
          );
          if (performance.now() >= untilMs) break;
          const kind = k % 2 === 0 ? "cancel" : "deadline";
          const fault: GroupFault & { releasedAt?: number } = {
            kind,
            atS: (performance.now() - started) / 1000,
            expected: kind === "cancel" ? "CANCELLED" : "DEADLINE_EXCEEDED",
            blockedOn: [],
          };
          faults.push(fault);
          const before = blockedOf.map((b) => b.count);
          const x = values(seededRandom(derivedSeed(seed, 5, 9, k)), ROWS * COLS, 64);
          const abort = new AbortController();
          hold++;
          let outcome: Outcome;
          try {
            const call = watchCall(
              async (signal) => {
                await group.executeSharded(p.block, [x], {
                  signal: AbortSignal.any([signal, abort.signal]),
                  deadlineMs: kind === "cancel" ? hang.deadlineMs : g.shortDeadlineMs,
                });
              },
              hang,
              () => tallies.faults.endedAfterHung++,
            );
            tallies.faults.started++;
            if (kind === "cancel") {
              // Mid-flight: once the function has blocked on every member (or the call ended).
              let ended = false;
              void call.then(() => {
                ended = true;
              });
              const everywhere = await until(
                () => ended || blockedOf.every((b, i) => b.count > before[i]),
                BLOCK_WAIT_MS,
              );
              fault.blockedBeforeCancel = everywhere && !ended;
              abort.abort();
            }
            outcome = await call;
          } finally {
            hold--;
          }
          count(tallies.faults, outcome);
          fault.status = outcomeName(outcome);
          if (outcome.kind === "failed") fault.message = outcome.message;
          const endedAt = performance.now();
          // Every function that blocked is let go (the sweeper), and only then may calls go on.
          await until(() => !unreleased(), RELEASE_WAIT_MS);
          fault.blockedOn = blockedOf.flatMap((b, i) => (b.count > before[i] ? [i] : []));
          if (!unreleased()) {
            fault.releasedAt = performance.now();
            fault.releasedAfterS = (fault.releasedAt - endedAt) / 1000;
          }
        }
      })();

      const [{ endedBy }] = await Promise.all([groupLanes, faulter, ...plainLanes]);
      const seconds = (performance.now() - started) / 1000;
      sweeping.abort();
      await sweeper;
      await until(() => !unreleased(), RELEASE_WAIT_MS);
      await sweep();
      const sessions = group.sessionCounts;
      const health = await group.alive({ deadlineMs: hang.deadlineMs });

      const tally = emptyTally();
      for (const t of [groupTally, tallies.faults, tallies.plain, tallies.releases])
        addTally(tally, t);
      return {
        seconds,
        inFlight: plan.inFlight,
        hang,
        endedBy,
        maxCalls,
        tally,
        workers: PROCESSES,
        devicesPerWorker: DEVICES,
        startS,
        formS,
        servesSessions,
        relays,
        plainInFlight: g.plainInFlight,
        shortDeadlineMs: g.shortDeadlineMs,
        group: groupTally,
        small: tallies.small,
        large: tallies.large,
        faultCalls: tallies.faults,
        plain: tallies.plain,
        releases: tallies.releases,
        faults: faults.map(({ releasedAt: _, ...f }) => f),
        sessions,
        unreleased: blockedOf.reduce((n, b, i) => n + Math.max(0, b.count - released[i]), 0),
        alive: health.filter((h) => h.alive).length,
      };
    } finally {
      group.close();
      for (const c of clients) c.close();
    }
  } finally {
    await job.stop();
  }
}

/** "answered", "wrong", "hung", or the failure's status. */
function outcomeName(outcome: Outcome): string {
  return outcome.kind === "failed" ? outcome.code : outcome.kind;
}

/** Whether group call `n` is a large one. */
function isLarge(n: number): boolean {
  return n % LARGE_EVERY === LARGE_EVERY - 1;
}

/** Options of one call: its deadline, and the signal that cancels it. */
interface CallOptions {
  deadlineMs: number;
  signal: AbortSignal;
}

/** summarize on the whole job, over sessions: x whole numbers, y halves. */
async function smallCall(
  group: WorkerGroup,
  program: Program,
  n: number,
  random: () => number,
  options: CallOptions,
): Promise<void> {
  const x = values(random, ROWS * COLS, 64);
  const y = values(random, ROWS * COLS, 64, true);
  const result = await group.executeSharded(program, [x, y], options);
  checkSummarize(`group call ${n} (summarize)`, result, x, y);
}

/** affine's inputs for x of rows × cols, drawn from `random` in this order: x, scale, shift. */
function affineInputs(random: () => number, rows: number, cols: number) {
  const x = values(random, rows * cols, 1000);
  const scale = 1 + Math.floor(random() * 4);
  return { x, scale, shift: values(random, cols, 1000) };
}

/** affine on the whole job with 2 MiB a member: by ExecuteSharded streams. */
async function largeCall(
  group: WorkerGroup,
  program: Program,
  n: number,
  random: () => number,
  options: CallOptions,
): Promise<void> {
  const { x, scale, shift } = affineInputs(random, SIDE, SIDE);
  const { data } = await group.executeSharded(program, [x, Float32Array.of(scale), shift], options);
  checkAffine(`group call ${n} (affine, large)`, floats(data[0]), x, scale, shift);
}

/** affine on one worker's own devices: Execute (even calls) or ExecuteSharded (odd ones). */
async function plainCall(
  client: WorkerClient,
  program: Program,
  n: number,
  random: () => number,
  options: CallOptions,
): Promise<void> {
  const { x, scale, shift } = affineInputs(random, PLAIN_ROWS, PLAIN_COLS);
  const what = `plain call ${n} on ${client.target}`;
  if (n % 2 === 0) {
    const { data } = await client.execute(program, [f32(x), f32([scale]), f32(shift)], options);
    checkAffine(`${what} (Execute)`, floats(data[0]), x, scale, shift);
  } else {
    const inputs = [x, Float32Array.of(scale), shift];
    const { data } = await client.executeSharded(program, inputs, options);
    checkAffine(`${what} (ExecuteSharded)`, floats(data[0]), x, scale, shift);
  }
}
