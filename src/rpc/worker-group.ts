import { decodeProgram } from "../decode";
import { DecodeError } from "../errors";
import { deviceIdsOf } from "../model/device-list";
import type { Program } from "../model/program";
import { newCallId } from "./call-id";
import type { ConnectOptions, WorkerClient } from "./client";
import { connectAll } from "./group-connect";
import { settleMembers } from "./group-failure";
import { describeMember, type GroupMember, type MemberHealth } from "./group-member";
import { GroupBuffers, memberScope } from "./group-shards";
import { checkOneJob, type GroupTopology } from "./group-topology";
import {
  checkShardedCall,
  type ShardedOptions,
  type ShardedProgress,
  type ShardedResult,
} from "./sharded-call";

/** How long `alive()` waits for each member unless told. */
const DEFAULT_PROBE_MS = 5_000;

/**
 * Many workers as one JAX job (jax.distributed): one worker per process, each serving its
 * process's devices. A call runs the same program on every member (SPMD, as JAX requires),
 * sends each member only its devices' shards, and assembles the outputs from theirs. Each
 * member's calls keep within that member's own limits, as its GetVersion answer states them
 * (its WorkerClient's queue, src/rpc/call-queue.ts; `maxQueuedCalls` bounds each queue).
 */
export class WorkerGroup {
  private constructor(
    private readonly clients: readonly WorkerClient[],
    /** The members, in the order their targets were given. */
    readonly members: readonly GroupMember[],
    /** The job they form: its process count and global devices. */
    readonly topology: GroupTopology,
    /** The colocated.v1 minor version every member speaks. */
    readonly version: number,
  ) {}

  /** The previous call's end: calls run one at a time. */
  private turn: Promise<unknown> = Promise.resolve();

  /**
   * Connects to every worker (with the options of WorkerClient.connect: TLS, compression,
   * versions, deadline), settles on one version they all accept (VersionMismatchError if
   * none), and checks with GetTopology that they form one job, each process once
   * (GroupTopologyError otherwise).
   */
  static async connect(
    targets: readonly string[],
    options: ConnectOptions = {},
  ): Promise<WorkerGroup> {
    const clients = await connectAll(targets, options);
    try {
      const topologies = await Promise.all(clients.map((c) => c.getTopology()));
      const job = checkOneJob(
        clients.map((c, i) => ({ target: c.target, topology: topologies[i] })),
      );
      const members = clients.map((c, i) => {
        const processIndex = topologies[i].processIndex;
        return { target: c.target, processIndex, devices: job.byProcess[processIndex] };
      });
      return new WorkerGroup(clients, members, job, clients[0].version);
    } catch (error) {
      for (const c of clients) c.close();
      throw error;
    }
  }

  /**
   * Runs a program on every member with ExecuteSharded: each input leaf is the caller's global
   * array (as WorkerClient.executeSharded takes it), of which each member gets the shards its
   * devices hold; each output comes back into one global buffer, filled from every member's
   * shards. When one member fails (dies, hangs past the deadline, answers wrongly), the call
   * is cancelled on the others and fails with a MemberError naming it. Calls run one at a
   * time, in the order made (JAX needs every process to run the job's computations in one
   * order); a call's deadline counts from its turn. Each call is named on every member
   * (src/rpc/call-id.ts), so a call that one member refused runs on none.
   */
  executeSharded(
    program: Program | Uint8Array,
    inputs: readonly ArrayBufferView[],
    options: ShardedOptions = {},
  ): Promise<ShardedResult> {
    const model = program instanceof Uint8Array ? decodeProgram(program) : program;
    checkShardedCall(model.inputs.leaves, inputs, options, model.outputs?.leaves); // before its turn
    const call = this.turn.then(() => this.callAll(model, inputs, options));
    this.turn = call.catch(() => undefined);
    return call;
  }

  /** One call on every member: the program loaded on each first, then every member's stream. */
  private async callAll(
    model: Program,
    inputs: readonly ArrayBufferView[],
    options: ShardedOptions,
  ): Promise<ShardedResult> {
    options.signal?.throwIfAborted();
    const cancel = new AbortController();
    const onAbort = () => cancel.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const buffers = new GroupBuffers();
    const moved = this.members.map(() => ({ sentBytes: 0, receivedBytes: 0 }));
    const onProgress = options.onProgress && this.progress(moved, options.onProgress);
    const firstDevice = deviceIdsOf(model.devices)[0];
    const callId = newCallId();
    const calls = () =>
      this.clients.map((client, i) => {
        const member = this.members[i];
        const devices = new Set(member.devices.map((d) => d.id));
        return client.executeSharded(model, inputs, {
          ...options,
          signal: cancel.signal,
          callId,
          scope: memberScope(devices, firstDevice, buffers, `process ${member.processIndex}`),
          onProgress: onProgress && ((p) => onProgress(i, p)),
        });
      });
    try {
      // Loaded everywhere first: a member that answered NOT_FOUND alone would hold the others
      // at the call's barrier while it loads.
      const loads = this.clients.map((client) => client.loadProgram(model));
      await settleMembers(loads, cancel, this.members, options.signal);
      const results = await settleMembers(calls(), cancel, this.members, options.signal);
      checkSameOutputs(results, this.members);
      return results[0];
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
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
          const topology = await client.getTopology({ deadlineMs });
          if (topology.processIndex === member.processIndex) return { member, alive: true };
          const detail = `it is process ${topology.processIndex} now, not ${member.processIndex}`;
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

  /** Closes every member's channel (calls in flight finish; cancel one with `signal`). */
  close(): void {
    for (const c of this.clients) c.close();
  }

  /** The sum of every member's bytes moved, reported after each member's chunk. */
  private progress(
    moved: ShardedProgress[],
    report: (progress: ShardedProgress) => void,
  ): (member: number, progress: ShardedProgress) => void {
    return (member, progress) => {
      moved[member] = { ...progress };
      report({
        sentBytes: moved.reduce((n, p) => n + p.sentBytes, 0),
        receivedBytes: moved.reduce((n, p) => n + p.receivedBytes, 0),
      });
    };
  }
}

/**
 * Every member must have sent the same output specs, as one SPMD program does (a member
 * replicates an output its function made on its own process over the whole job, so even
 * those agree): specs that differ mean the members did not run the same thing.
 */
function checkSameOutputs(results: readonly ShardedResult[], members: readonly GroupMember[]) {
  const want = Buffer.from(results[0].outputSpecsPayload);
  results.forEach((r, i) => {
    if (!want.equals(r.outputSpecsPayload)) {
      const detail = `the members disagree on the output specs (${describeMember(members[i])} against ${describeMember(members[0])}): they did not run the same program on the same devices`;
      throw new DecodeError("output_specs", "invalid-value", detail);
    }
  });
}
