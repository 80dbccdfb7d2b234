import { setMaxListeners } from "node:events";
import type { WorkerRuntime } from "../../gen/ts/colocated/v1/service";
import { decodeProgram } from "../decode";
import type { Program } from "../model/program";
import { newCallId } from "./call-id";
import { type ConnectOptions, DEFAULT_DEADLINE_MS, type WorkerClient } from "./client";
import { GroupCall } from "./group-call";
import { connectAll } from "./group-connect";
import { settleMembers } from "./group-failure";
import type { GroupMember, MemberHealth } from "./group-member";
import { type GroupLayout, GroupProgram } from "./group-program";
import { checkRuntimes } from "./group-runtime";
import { callSessions, SESSION_MAX_INPUT_BYTES } from "./group-session-call";
import { checkOneJobBytes, type GroupTopology } from "./group-topology";
import type { RelayedSession, RelayStream } from "./relay";
import type { MemberSession } from "./session-calls";
import {
  type CheckedCall,
  callSharded,
  checkShardedCall,
  type ShardedOptions,
  type ShardedResult,
} from "./sharded-call";
import { readTopologyBytes } from "./topology";

/** How long `alive()` waits for each member unless told. */
const DEFAULT_PROBE_MS = 5_000;

/** How to reach the workers (WorkerClient's options), and how to carry small calls. */
export interface GroupOptions extends ConnectOptions {
  /**
   * Carry each call whose inputs are small (at most 1 MiB a member) on one long-lived Session
   * stream per member, when every member serves them (true by default); false calls every
   * member with a stream of its own (ExecuteSharded) every call.
   */
  sessions?: boolean;
  /**
   * How many members' sessions each relaying member carries (Relay), itself among them: the
   * controller then keeps one stream per relay, not one per member, which keeps a member's
   * call as cheap at a thousand members as at sixteen (docs/multi-worker.md). The first of
   * each run of this many members (in the order of the targets) relays for the run, reaching
   * the others at the targets given here. By default max(RELAY_FROM, ⌈√N⌉) from RELAY_FROM
   * members up, when every member serves relays; 0 or 1: a session from the controller to
   * each member.
   */
  relayFanout?: number;
}

/**
 * The fewest members relayed by default, and the fewest a relay carries (`relayFanout`): a
 * relay's stream costs the controller about what a member's session does, so a relay pays
 * for itself when it carries many.
 */
export const RELAY_FROM = 16;

/**
 * Many workers as one JAX job (jax.distributed): one worker per process, each serving its
 * process's devices. A call runs the same program on every member (SPMD, as JAX requires),
 * sends each member only its devices' shards, and assembles the outputs from theirs. Each
 * member has one channel, reused by every call, and its calls keep within that member's own
 * limits, as its GetVersion answer states them (its WorkerClient's queue,
 * src/rpc/call-queue.ts; `maxQueuedCalls` bounds each queue); since calls run one at a time,
 * a member has at most one call of the group in flight, and its program's load.
 *
 * A call whose inputs are small goes to each member as one message on a Session stream the
 * member keeps open (src/rpc/group-session-call.ts), when every member serves them; a larger
 * one as an ExecuteSharded stream per member.
 *
 * What a call costs grows with the members only by what each member's stream costs: what
 * every member shares is worked out once per program (src/rpc/group-program.ts: the program
 * lowered and encoded once, each member's shards, the start message, the output specs decoded
 * once) and the outputs land in place (src/rpc/group-call.ts). docs/multi-worker.md has the
 * figures.
 */
export class WorkerGroup {
  /** Each program's plan, found at its first call. */
  private readonly programs = new WeakMap<Program, GroupProgram>();
  /** The last program given as bytes, decoded, so that calling it again decodes nothing. */
  private lastBytes: { bytes: Buffer; program: Program } | undefined;
  /** The previous call's end: calls run one at a time. */
  private turn: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly clients: readonly WorkerClient[],
    /** The members, in the order their targets were given. */
    readonly members: readonly GroupMember[],
    /** The job they form: its process count and global devices. */
    readonly topology: GroupTopology,
    /** The colocated.v1 minor version every member speaks. */
    readonly version: number,
    private readonly layout: GroupLayout,
    /** A call's deadline unless it gives one: the connect options'. */
    private readonly deadlineMs: number,
    /** Each member's session, when every member serves them and the options allow. */
    private sessions: readonly MemberSession[] | undefined,
    /** How many members carry the others' sessions (relays). */
    private relaying: number,
    /**
     * How the members' runtimes differ where a group may (colocated-wire, Python patch, JAX,
     * NumPy, cloudpickle, platform, device kind), one line each naming the members; a group
     * whose members differ in jaxlib or Python minor does not form (GroupRuntimeError).
     */
    readonly runtimeDifferences: readonly string[],
  ) {}

  /** What each member runs, in the members' order (undefined: a worker too old to say). */
  get runtimes(): readonly (WorkerRuntime | undefined)[] {
    return this.clients.map((c) => c.runtime);
  }

  /** How many members relay the others' sessions (0: the controller keeps one per member). */
  get relays(): number {
    return this.relaying;
  }

  /**
   * Connects to every worker (with the options of WorkerClient.connect: TLS, compression,
   * versions, deadline), settles on one version they all accept (VersionMismatchError if
   * none), and checks with GetTopology that they form one job, each process once
   * (GroupTopologyError otherwise). The members' answers list the same devices, so one is
   * decoded and the others compared with it by bytes (checkOneJobBytes).
   */
  static async connect(
    targets: readonly string[],
    options: GroupOptions = {},
  ): Promise<WorkerGroup> {
    const clients = await connectAll(targets, options);
    try {
      const runtimeDifferences = checkRuntimes(
        clients.map((c) => ({ target: c.target, runtime: c.runtime })),
      );
      const answers = await Promise.all(clients.map((c) => c.getTopologyBytes()));
      const { job, processIndex } = checkOneJobBytes(
        clients.map((c, i) => ({ target: c.target, bytes: answers[i] })),
      );
      const members = clients.map((c, i) => ({
        target: c.target,
        processIndex: processIndex[i],
        devices: job.byProcess[processIndex[i]],
      }));
      const memberOf = new Map<number, number>();
      members.forEach((m, i) => {
        for (const d of m.devices) memberOf.set(d.id, i);
      });
      const layout = { members: members.length, memberOf };
      const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
      const { sessions, relays = 0 } = (await openSessions(clients, options, deadlineMs)) ?? {};
      const version = clients[0].version;
      return new WorkerGroup(
        clients,
        members,
        job,
        version,
        layout,
        deadlineMs,
        sessions,
        relays,
        runtimeDifferences,
      );
    } catch (error) {
      for (const c of clients) c.close();
      throw error;
    }
  }

  /**
   * Runs a program on every member with ExecuteSharded: each input leaf is the caller's global
   * array (as WorkerClient.executeSharded takes it), of which each member gets the shards its
   * devices hold, read from it in place; each output comes back into one global buffer,
   * filled in place from every member's shards. When one member fails (dies, hangs past the
   * deadline, answers wrongly), the call is cancelled on the others at once and fails with a
   * MemberError naming it. Calls run one at a time, in the order made (JAX needs every
   * process to run the job's computations in one order); a call's deadline counts from its
   * turn. Each call is named on every member (src/rpc/call-id.ts), so a call that one member
   * refused runs on none. A Program model is planned once per object (GroupProgram), so a
   * program must not be changed after it was first called.
   */
  executeSharded(
    program: Program | Uint8Array,
    inputs: readonly ArrayBufferView[],
    options: ShardedOptions = {},
  ): Promise<ShardedResult> {
    const model = program instanceof Uint8Array ? this.decoded(program) : program;
    // Before its turn.
    const checked = checkShardedCall(model.inputs.leaves, inputs, options, model.outputs?.leaves);
    const call = this.turn.then(() => this.callAll(this.plan(model), checked, options));
    this.turn = call.catch(() => undefined);
    return call;
  }

  /** One call on every member: the program loaded on each first, then every member's stream. */
  private async callAll(
    program: GroupProgram,
    checked: CheckedCall,
    options: ShardedOptions,
  ): Promise<ShardedResult> {
    options.signal?.throwIfAborted();
    const cancel = new AbortController();
    setMaxListeners(0, cancel.signal); // one listener per member's stream
    const onAbort = () => cancel.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const call = new GroupCall(program, this.members);
    const report = options.onProgress;
    const specs = program.program.inputs.leaves;
    const callId = newCallId();
    // One deadline for every member: a member whose stream starts later gets what is left.
    const deadlineMs = options.deadlineMs ?? this.deadlineMs;
    const deadline = Date.now() + deadlineMs;
    const stream = (client: WorkerClient, i: number) =>
      client.withHandle(
        program.sent,
        program.inputBytes[i],
        { deadlineMs: Math.max(1, deadline - Date.now()), signal: cancel.signal },
        (target, digest, deadlineMs) =>
          callSharded(target, this.version, program.start(digest), specs, checked, {
            deadlineMs,
            signal: cancel.signal,
            callId,
            scope: call.scope(i),
            onProgress: report && ((p) => report(call.progress(i, p))),
          }),
      );
    try {
      // Loaded everywhere first: a member that answered NOT_FOUND alone would hold the others
      // at the call's barrier while it loads.
      const loads = this.clients.map((client) => client.loadSent(program.sent));
      const digests = await settleMembers(loads, cancel, this.members, options.signal);
      const sessions = this.sessions;
      if (sessions !== undefined && program.maxInputBytes <= SESSION_MAX_INPUT_BYTES) {
        const members = sessions.map((session, i) => ({
          session,
          digest: digests[i],
          reload: () => this.clients[i].reloadSent(program.sent),
        }));
        const calls = callSessions(members, program, this.version, checked, call, {
          deadline,
          deadlineMs,
          jobCallId: callId,
          cancel: cancel.signal,
          onProgress: report && ((i, p) => report(call.progress(i, p))),
        });
        try {
          await settleMembers(calls, cancel, this.members, options.signal);
        } catch (error) {
          // A member that refused to open another session (a broken one's) serves no more:
          // this call fails, naming it, and later calls go by ExecuteSharded.
          if (sessions.some((s) => s.refused)) this.dropSessions();
          throw error;
        }
        return call.result();
      }
      const results = await settleMembers(
        this.clients.map(stream),
        cancel,
        this.members,
        options.signal,
      );
      return results[0];
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The program's plan for this group, made at its first call. */
  private plan(program: Program): GroupProgram {
    let plan = this.programs.get(program);
    if (plan === undefined) {
      plan = new GroupProgram(program, this.version, this.layout);
      this.programs.set(program, plan);
    }
    return plan;
  }

  /** Program bytes as a model: the last ones again when they are the same bytes. */
  private decoded(bytes: Uint8Array): Program {
    const last = this.lastBytes;
    if (last?.bytes.equals(bytes)) return last.program;
    const program = decodeProgram(bytes);
    this.lastBytes = { bytes: Buffer.from(bytes), program };
    return program;
  }

  /**
   * Probes every member with GetTopology, each by its deadline: alive when it answers as the
   * same process. After a member died, the JAX job itself is broken (its collectives cannot
   * complete, and JAX ends the others within its heartbeat timeout, 100 s): restart every
   * worker and connect again.
   */
  async alive(options: { deadlineMs?: number } = {}): Promise<MemberHealth[]> {
    const deadlineMs = options.deadlineMs ?? DEFAULT_PROBE_MS;
    return Promise.all(
      this.clients.map(async (client, i) => {
        const member = this.members[i];
        try {
          const { processIndex } = readTopologyBytes(await client.getTopologyBytes({ deadlineMs }));
          if (processIndex === member.processIndex) return { member, alive: true };
          const detail = `it is process ${processIndex} now, not ${member.processIndex}`;
          return { member, alive: false, error: new Error(detail) };
        } catch (error) {
          return { member, alive: false, error: error as Error };
        }
      }),
    );
  }

  /** How many times the group sent a program with LoadProgram, over every member. */
  get programLoads(): number {
    return this.clients.reduce((n, c) => n + c.programLoads, 0);
  }

  /** Ends every member's session: later calls go by ExecuteSharded. */
  private dropSessions(): void {
    for (const s of this.sessions ?? []) s.close();
    this.sessions = undefined;
    this.relaying = 0;
  }

  /** How many member calls went over sessions, and how many session streams were opened. */
  get sessionCounts(): { calls: number; streams: number } {
    const sessions = this.sessions ?? [];
    return {
      calls: sessions.reduce((n, s) => n + s.calls, 0),
      streams: sessions.reduce((n, s) => n + s.streams, 0),
    };
  }

  /** Closes every member's channel (calls in flight finish; cancel one with `signal`). */
  close(): void {
    this.dropSessions();
    for (const c of this.clients) c.close();
  }
}

/**
 * Each member's session, open and taken by its worker (or its relay), when every member serves
 * them and the options allow; none (every call by ExecuteSharded) when a worker refuses one
 * (it serves as many as its --max-sessions). Relayed (relaySessions) when the fan-out says so
 * and every member serves relays. Throws what else went wrong (the worker is unreachable).
 */
async function openSessions(
  clients: readonly WorkerClient[],
  options: GroupOptions,
  deadlineMs: number,
): Promise<{ sessions: MemberSession[]; relays: number } | undefined> {
  if (options.sessions === false || !clients.every((c) => c.servesSessions)) return undefined;
  const fanout = options.relayFanout ?? defaultFanout(clients.length);
  if (fanout > 1 && clients.every((c) => c.servesRelays)) {
    const relayed = await relaySessions(clients, fanout, deadlineMs);
    if (relayed !== undefined) return relayed;
  }
  const sessions = clients.map((c) => c.openSession());
  const taken = await Promise.allSettled(sessions.map((s) => s.accepted(deadlineMs)));
  const failed = taken.find((t) => t.status === "rejected");
  if (failed === undefined) return { sessions, relays: 0 };
  for (const s of sessions) s.close();
  if (sessions.some((s) => s.refused)) return undefined;
  throw failed.reason;
}

/**
 * From RELAY_FROM members up, ⌈√N⌉ members a relay (as many relays as members a relay: no
 * relaying member carries more than the controller does), and at least RELAY_FROM.
 */
function defaultFanout(members: number): number {
  return members >= RELAY_FROM ? Math.max(RELAY_FROM, Math.ceil(Math.sqrt(members))) : 0;
}

/**
 * Each member's session carried by a relay: the first of each run of `fanout` members relays
 * for the run. None when a relaying worker refuses the stream, or a relay cannot reach a
 * member the controller reached (sessions go direct then).
 */
async function relaySessions(
  clients: readonly WorkerClient[],
  fanout: number,
  deadlineMs: number,
): Promise<{ sessions: MemberSession[]; relays: number } | undefined> {
  const relays: RelayStream[] = [];
  for (let first = 0; first < clients.length; first += fanout) {
    const run = clients.slice(first, first + fanout).map((c) => c.target);
    relays.push(clients[first].openRelay(run));
  }
  const taken = await Promise.allSettled(relays.map((r) => r.accepted(deadlineMs)));
  const failed = taken.find((t) => t.status === "rejected");
  if (failed === undefined) {
    return { sessions: relays.flatMap((r) => r.sessions), relays: relays.length };
  }
  for (const r of relays) r.close();
  // A relaying worker, or a member, that refused, or a member out of its relay's reach (the
  // controller reached it at connect): a session to each member is tried instead.
  const direct = (s: RelayedSession) => s.refused || s.unreached;
  if (relays.some((r) => r.refused || r.sessions.some(direct))) return undefined;
  throw failed.reason;
}
