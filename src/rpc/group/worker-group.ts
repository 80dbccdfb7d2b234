import { setMaxListeners } from "node:events";
import type { WorkerRuntime } from "../../../gen/ts/colocated/v1/service";
import { decodeProgram } from "../../decode";
import type { Program } from "../../model/program";
import { type ConnectOptions, DEFAULT_DEADLINE_MS, type WorkerClient } from "../client/client";
import { readTopologyBytes } from "../messages/topology-response";
import { newCallId } from "../sharded/call-id";
import {
  type CheckedCall,
  checkShardedCall,
  type ShardedOptions,
  type ShardedResult,
} from "../sharded/sharded-call";
import {
  chooseTransport,
  type MemberTransport,
  StreamsTransport,
  type TransportName,
  type TransportOptions,
} from "../transports";
import { GroupCall } from "./group-call";
import { connectAll } from "./group-connect";
import { settleMembers } from "./group-failure";
import type { GroupMember, MemberHealth } from "./group-member";
import { type GroupLayout, GroupProgram } from "./group-program";
import { checkRuntimes } from "./group-runtime";
import { checkOneJobBytes, type GroupTopology } from "./group-topology";

/** How long `alive()` waits for each member unless told. */
const DEFAULT_PROBE_MS = 5_000;

/** How to reach the workers (WorkerClient's options), and how their calls travel. */
export interface GroupOptions extends ConnectOptions, TransportOptions {}

/**
 * Many workers as one JAX job (jax.distributed): one worker per process, each serving its
 * process's devices. A call runs the same program on every member (SPMD, as JAX requires),
 * sends each member only its devices' shards, and assembles the outputs from theirs. Each
 * member has one channel, reused by every call, and its calls keep within that member's own
 * limits, as its GetVersion answer states them (its WorkerClient's queue,
 * src/rpc/client/call-queue.ts; `maxQueuedCalls` bounds each queue); since calls run one at a time,
 * a member has at most one call of the group in flight, and its program's load.
 *
 * A call travels to the members by one transport (src/rpc/transports/), chosen when the group
 * forms: a call whose inputs are small goes to each member as one message on a Session stream
 * the member keeps open (relayed by some members in a large group), when every member serves
 * them; a larger one as an ExecuteSharded stream per member.
 *
 * What a call costs grows with the members only by what each member's stream costs: what
 * every member shares is worked out once per program (src/rpc/group/group-program.ts: the program
 * lowered and encoded once, each member's shards, the start message, the output specs decoded
 * once) and the outputs land in place (src/rpc/group/group-call.ts). docs/multi-worker.md has the
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
    /** How the calls travel: chosen when the group forms, streams after it broke. */
    private transport: MemberTransport,
    /** What carries the calls the transport does not, and every call once it broke. */
    private readonly streams: MemberTransport,
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
    return this.transport.relays;
  }

  /** How the members' calls travel now: relays, sessions or streams (src/rpc/transports/). */
  get transportName(): TransportName {
    return this.transport.name;
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
      const version = clients[0].version;
      const transport = await chooseTransport(clients, version, options, deadlineMs);
      return new WorkerGroup(
        clients,
        members,
        job,
        version,
        layout,
        deadlineMs,
        transport,
        new StreamsTransport(clients, version),
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
   * turn. Each call is named on every member (src/rpc/sharded/call-id.ts), so a call that one member
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

  /** One call on every member: the program loaded on each first, then the call by the transport. */
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
    const deadlineMs = options.deadlineMs ?? this.deadlineMs;
    // One deadline for every member: a member whose stream starts later gets what is left.
    const deadline = Date.now() + deadlineMs;
    try {
      // Loaded everywhere first: a member that answered NOT_FOUND alone would hold the others
      // at the call's barrier while it loads.
      const loads = this.clients.map((client) => client.loadSent(program.sent));
      const digests = await settleMembers(loads, cancel, this.members, options.signal);
      const transport = this.transport.carries(program) ? this.transport : this.streams;
      const calls = transport.call({
        program,
        checked,
        call,
        digests,
        callId: newCallId(),
        deadline,
        deadlineMs,
        cancel: cancel.signal,
        onProgress: report && ((i, p) => report(call.progress(i, p))),
      });
      try {
        await settleMembers(calls, cancel, this.members, options.signal);
      } catch (error) {
        // This call fails, naming the member; later calls go by streams.
        if (transport.broken) this.fallBack();
        throw error;
      }
      return call.result();
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

  /** Closes the transport: later calls go by streams. */
  private fallBack(): void {
    this.transport.close();
    this.transport = this.streams;
  }

  /** How many member calls went over sessions, and how many session streams were opened. */
  get sessionCounts(): { calls: number; streams: number } {
    return this.transport.counts;
  }

  /** Closes every member's channel (calls in flight finish; cancel one with `signal`). */
  close(): void {
    this.fallBack();
    for (const c of this.clients) c.close();
  }
}
