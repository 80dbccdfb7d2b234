import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import {
  DeviceList,
  encodeProgram,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  type Program,
  SCHEMA_MINOR_VERSION,
  ShapeDtypeStruct,
} from "../src";
import { main } from "../src/cli/main";
import { describeRuntime } from "../src/cli/topology";
import {
  callInputs,
  GroupTopologyError,
  MemberError,
  type ShardedProgress,
  type Topology,
  VersionMismatchError,
  WorkerClient,
  WorkerError,
  WorkerGroup,
} from "../src/rpc";
import { connectAll } from "../src/rpc/group/group-connect";
import { settleMembers } from "../src/rpc/group/group-failure";
import { planShards } from "../src/rpc/group/group-shards";
import { checkOneJob } from "../src/rpc/group/group-topology";
import { range } from "./fixtures";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startJob,
  startWorker,
  stopAllWorkers,
  whenStderrSays,
} from "./rpc-worker";
import { expectSummarized, floats } from "./summarize-outputs";

// Two real worker processes of four CPU devices each, joined as one JAX job (jax.distributed,
// gloo collectives), driven by one WorkerGroup.
jest.setTimeout(180_000);

const EXAMPLES = "colocated_wire.examples";
/** The job's global device ids: process 0 holds 0–3, process 1 holds 2048–2051. */
const IDS = [0, 1, 2, 3, 2048, 2049, 2050, 2051];
/** Mesh rows are processes: "x" crosses them, "y" stays within one. */
const mesh = new Mesh(new DeviceList(IDS), [2, 4], ["x", "y"]);
const f32 = (shape: number[], ...entries: (string | null)[]) =>
  new ShapeDtypeStruct(shape, "float32", new NamedSharding(mesh, new PartitionSpec(...entries)));

function example(qualname: string, args: ShapeDtypeStruct[]): Program {
  return {
    function: new FunctionRef(EXAMPLES, qualname),
    inputs: callInputs(args),
    devices: mesh.devices,
  };
}

/** Runs the command line in this process: its exit status and what it printed. */
async function cli(...args: string[]): Promise<{ status: number; out: string }> {
  const printed: string[] = [];
  const log = jest.spyOn(console, "log").mockImplementation((line: string) => printed.push(line));
  const error = jest
    .spyOn(console, "error")
    .mockImplementation((line: string) => printed.push(line));
  try {
    const status = await main(["node", "colocated-wire", ...args]);
    return { status, out: printed.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** A worker's view of a job of `count` processes, as GetTopology gives it. */
function topology(processIndex: number, count: number, ids = IDS): Topology {
  const perProcess = ids.length / count;
  const devices = ids.map((id, i) => ({
    id,
    processIndex: Math.floor(i / perProcess),
    platform: "cpu",
    kind: "cpu",
    coords: [],
    coreOnChip: 0,
  }));
  return { processCount: count, processIndex, devices };
}

describe("the one-job check and the shards of a member (no workers)", () => {
  const cases: [string, { target: string; topology: Topology }[], string, string][] = [
    [
      "two jobs of one process",
      [
        { target: "a:1", topology: topology(0, 1, [0, 1]) },
        { target: "b:1", topology: topology(0, 1, [0, 1]) },
      ],
      "process-count",
      "2 workers, but their job has 1 process: give one worker per process",
    ],
    [
      "different process counts",
      [
        { target: "a:1", topology: topology(0, 2) },
        { target: "b:1", topology: topology(1, 4) },
      ],
      "process-count",
      "a:1 is in a job of 2 processes, b:1 in one of 4: they are not one job",
    ],
    [
      "the same process twice",
      [
        { target: "a:1", topology: topology(1, 2) },
        { target: "b:1", topology: topology(1, 2) },
      ],
      "process-index",
      "a:1 and b:1 are both process 1: they are not one job",
    ],
    [
      "other devices",
      [
        { target: "a:1", topology: topology(0, 2) },
        { target: "b:1", topology: topology(1, 2, range(8)) },
      ],
      "devices",
      "a:1 and b:1 list different global devices (8 devices, ids 0–3, 2048–2051 against 8 devices, ids 0–7): they are not one job",
    ],
  ];
  test.each(cases)("%s is a GroupTopologyError", (_, members, kind, message) => {
    let error: unknown;
    try {
      checkOneJob(members);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GroupTopologyError);
    expect(error).toMatchObject({ kind, message });
  });

  test("a failure in time names the member that did not answer, not the one that waited", async () => {
    const members = [0, 1, 2].map((p) => ({ target: `h:${p}`, processIndex: p, devices: [] }));
    const waited = new WorkerError(status.ABORTED, "not every member was ready");
    const silent = new WorkerError(status.DEADLINE_EXCEEDED, "deadline exceeded");
    const settle = (...calls: Promise<number>[]) =>
      settleMembers(calls, new AbortController(), members, undefined).then(
        () => undefined,
        (e: MemberError) => [e.member.processIndex, e.codeName],
      );
    // ABORTED first, then no answer: the silent one is named, whatever the order.
    expect(
      await settle(Promise.reject(waited), Promise.resolve(1), Promise.reject(silent)),
    ).toEqual([2, "DEADLINE_EXCEEDED"]);
    expect(
      await settle(Promise.reject(waited), Promise.reject(waited), Promise.resolve(1)),
    ).toEqual([0, "ABORTED"]);
    // Any other failure is named at once, and the others are cancelled.
    const cancel = new AbortController();
    const never = new Promise<number>(() => undefined);
    const dead = new WorkerError(status.UNAVAILABLE, "connection refused");
    const error = await settleMembers(
      [never, Promise.reject(dead)],
      cancel,
      members,
      undefined,
    ).then(
      () => undefined,
      (e: MemberError) => e,
    );
    expect(error?.member.processIndex).toBe(1);
    expect(error?.message).toBe(
      "member process 1 (h:1) failed: UNAVAILABLE: connection refused; cancelled on process 0 (h:0), process 2 (h:2)",
    );
    expect(cancel.signal.aborted).toBe(true);
  });

  test("one job: each process's devices", () => {
    const job = checkOneJob([
      { target: "b:1", topology: topology(1, 2) },
      { target: "a:1", topology: topology(0, 2) },
    ]);
    expect(job.byProcess.map((ds) => ds.map((d) => d.id))).toEqual([
      [0, 1, 2, 3],
      [2048, 2049, 2050, 2051],
    ]);
  });

  test("a member gets the shards its devices hold, a shared one once", () => {
    // Member 0 holds the first process's devices, member 1 the second's.
    const memberOf = new Map(IDS.map((id, i) => [id, i < 4 ? 0 : 1]));
    const [first, second] = [0, 1];
    const starts = (spec: ShapeDtypeStruct, member: number) =>
      planShards([spec], memberOf, 2, IDS[0])[member][0].map((s) => s.start.join(","));
    // Split over both processes: four shards each.
    expect(starts(f32([8, 4], "x", "y"), first)).toEqual(["0,0", "0,1", "0,2", "0,3"]);
    expect(starts(f32([8, 4], "x", "y"), second)).toEqual(["4,0", "4,1", "4,2", "4,3"]);
    // Split within a process only: every member holds every shard, and gets each once.
    expect(starts(f32([4], "y"), first)).toEqual(["0", "1", "2", "3"]);
    expect(starts(f32([4], "y"), second)).toEqual(["0", "1", "2", "3"]);
    // Replicated: the whole array to each. No sharding: on the program's first device only.
    expect(starts(f32([2]), second)).toEqual(["0"]);
    expect(starts(new ShapeDtypeStruct([2], "float32"), first)).toEqual(["0"]);
    expect(starts(new ShapeDtypeStruct([2], "float32"), second)).toEqual([]);
  });
});

describe("a WorkerGroup of two workers as one JAX job", () => {
  let job: RunningWorker[];
  const groups: WorkerGroup[] = [];
  const connect = async (workers: RunningWorker[]) => {
    const group = await WorkerGroup.connect(
      workers.map((w) => w.target),
      { deadlineMs: 60_000 },
    );
    groups.push(group);
    return group;
  };

  beforeAll(async () => {
    ensurePythonEnv();
    job = await startJob(2, 4, ["--allow-module", EXAMPLES]);
  }, 900_000);

  afterAll(async () => {
    for (const group of groups) group.close();
    await stopAllWorkers();
  });

  const X = Float32Array.from(range(32), (i) => i - 10);
  const Y = Float32Array.from(range(32), () => 0.5);

  test("topology: one job of two processes, four devices each, in any member order", async () => {
    const group = await connect([job[1], job[0]]);
    expect(group.topology.processCount).toBe(2);
    expect(group.topology.devices.map((d) => d.id)).toEqual(IDS);
    expect(group.members.map((m) => [m.target, m.processIndex])).toEqual([
      [job[1].target, 1],
      [job[0].target, 0],
    ]);
    expect(group.members[0].devices.map((d) => d.id)).toEqual([2048, 2049, 2050, 2051]);
  });

  test("a cross-process reduction and every output come back right, each shard sent once per member", async () => {
    const group = await connect(job);
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    let last: ShardedProgress = { sentBytes: 0, receivedBytes: 0 };
    const { outputs, data } = await group.executeSharded(program, [X, Y], {
      onProgress: (p) => {
        last = p;
      },
    });
    // X: 8 shards of 16 bytes, 4 to each member; Y: 2 shards of 64 bytes, one to each.
    expect(last.sentBytes).toBe(128 + 128);
    // count_positive: jnp.sum over an array split across both processes (a gloo collective).
    expectSummarized(X, outputs, data);
    // Into the caller's buffers: both members' shards land in the same ones.
    const into = data.map((d) => new Uint8Array(d.length).fill(0xee));
    const again = await group.executeSharded(program, [X, Y], { into });
    for (const [i, d] of again.data.entries()) expect(d).toBe(into[i]);
    expectSummarized(X, again.outputs, into);
    // Both calls went to each member as one message on the one Session it keeps.
    expect(group.sessionCounts).toEqual({ calls: 4, streams: 2 });
  });

  test("a replicated input goes to every member once; the program is loaded once per member", async () => {
    const group = await connect(job);
    const program = example("affine", [f32([8, 4], "x", "y"), f32([]), f32([4], "y")]);
    const shift = Float32Array.of(100, 200, 300, 400);
    let last: ShardedProgress = { sentBytes: 0, receivedBytes: 0 };
    // Made at once, run one after the other (in one order on every member, as JAX needs).
    const calls = [2, 3].map((scale) =>
      group.executeSharded(program, [X, Float32Array.of(scale), shift], {
        onProgress: (p) => {
          last = p;
        },
      }),
    );
    for (const [i, scale] of [2, 3].entries()) {
      const { data } = await calls[i];
      expect(floats(data[0])).toEqual(X.map((v, j) => v * scale + shift[j % 4]));
    }
    // X split in two, the scalar and shift's four shards to both.
    expect(last).toEqual({ sentBytes: 128 + 2 * 4 + 2 * 16, receivedBytes: 128 });
    expect(group.programLoads).toBe(2);
  });

  test("CLI: topology prints each process's worker and devices; call --worker runs on the group", async () => {
    const [t0, t1] = job.map((w) => w.target);
    const width = Math.max(t0.length, t1.length);
    const client = await WorkerClient.connect(t0);
    const runs = `  runs ${describeRuntime(client.runtime)}`; // one job: the same on both
    client.close();
    const topology = await cli("topology", "--worker", t1, "--worker", t0);
    expect(topology).toEqual({
      status: 0,
      out: [
        "a JAX job of 2 processes, 8 devices (cpu)",
        `process 0  ${t0.padEnd(width)}  4 devices, ids 0–3`,
        runs,
        `process 1  ${t1.padEnd(width)}  4 devices, ids 2048–2051`,
        runs,
      ].join("\n"),
    });
    const alone = await cli("topology", "--worker", t1);
    expect(alone.out.split("\n").slice(1)).toEqual([
      `process 0  (no worker given)  4 devices, ids 0–3`,
      `process 1  ${t1.padEnd(17)}  4 devices, ids 2048–2051`,
      runs,
    ]);
    const json = JSON.parse((await cli("topology", "--json", "--worker", t0, "--worker", t1)).out);
    expect(json.processes.map((p: { worker: string }) => p.worker)).toEqual([t0, t1]);
    expect(json.processes[1].runtime.jaxlib).toMatch(/^\d+\.\d+/);
    expect(json.differences).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), "worker-group-cli-"));
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    writeFileSync(join(dir, "program.bin"), encodeProgram(program));
    writeFileSync(join(dir, "x.bin"), new Uint8Array(X.buffer));
    writeFileSync(join(dir, "y.bin"), new Uint8Array(Y.buffer));
    const call = await cli(
      "call",
      join(dir, "program.bin"),
      ...["-i", join(dir, "x.bin"), "-i", join(dir, "y.bin")],
      ...["-w", t0, "-w", t1, "--out-dir", dir],
    );
    expect(call.status).toBe(0);
    expect(call.out).toMatch(
      new RegExp(
        `^workers ${t0}, ${t1}: a JAX job of 2 processes, colocated\\.v1 version 1\\.\\d+\n`,
      ),
    );
    expect(floats(Uint8Array.from(readFileSync(join(dir, "output-1.bin"))))).toEqual(
      X.map((v) => v * 2),
    );
    expect(readFileSync(join(dir, "output-0.bin")).readInt32LE(0)).toBe(
      X.filter((v) => v > 0).length,
    );
  });

  test("a member that hangs fails the call by its deadline, naming it; alive() says who answers", async () => {
    const group = await connect(job);
    const program = example("affine", [f32([8, 4], "x", "y"), f32([]), f32([4], "y")]);
    const inputs = [X, Float32Array.of(1), new Float32Array(4)];
    await group.executeSharded(program, inputs); // loaded and compiled on both
    job[1].process.kill("SIGSTOP");
    try {
      const error = await group.executeSharded(program, inputs, { deadlineMs: 6_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MemberError);
      expect((error as MemberError).member.processIndex).toBe(1);
      expect((error as MemberError).code).toBe(status.DEADLINE_EXCEEDED);
      expect((error as MemberError).message).toContain("(no answer within 6000 ms)");
      const health = await group.alive({ deadlineMs: 2_000 });
      expect(health.map((h) => h.alive)).toEqual([true, false]);
    } finally {
      job[1].process.kill("SIGCONT");
    }
    const health = await group.alive({ deadlineMs: 10_000 });
    expect(health.map((h) => h.alive)).toEqual([true, true]);
    // The call ran on neither member (they meet at a barrier first), so the job still works,
    // on the sessions the members kept.
    const { data } = await group.executeSharded(program, [
      X,
      Float32Array.of(2),
      new Float32Array(4),
    ]);
    expect(floats(data[0])).toEqual(X.map((v) => v * 2));
    expect(group.sessionCounts).toEqual({ calls: 6, streams: 2 });
  });

  test("relayed: one member carries both members' sessions; calls come back right, a hang is named by its deadline", async () => {
    const group = await WorkerGroup.connect(
      job.map((w) => w.target),
      { deadlineMs: 60_000, relayFanout: 2 },
    );
    groups.push(group);
    expect([group.transportName, group.relays]).toEqual(["relays", 1]);
    const summarize = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    for (let i = 0; i < 3; i++) {
      const { outputs, data } = await group.executeSharded(summarize, [X, Y]);
      expectSummarized(X, outputs, data);
    }
    expect(group.sessionCounts).toEqual({ calls: 6, streams: 2 });
    const affine = example("affine", [f32([8, 4], "x", "y"), f32([]), f32([4], "y")]);
    const inputs = [X, Float32Array.of(1), new Float32Array(4)];
    await group.executeSharded(affine, inputs);
    job[1].process.kill("SIGSTOP"); // the member the relay carries, not the relay
    try {
      const error = await group.executeSharded(affine, inputs, { deadlineMs: 6_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MemberError);
      expect((error as MemberError).member.processIndex).toBe(1);
      expect((error as MemberError).code).toBe(status.DEADLINE_EXCEEDED);
    } finally {
      job[1].process.kill("SIGCONT");
    }
    expect((await group.alive({ deadlineMs: 10_000 })).map((h) => h.alive)).toEqual([true, true]);
    const { data } = await group.executeSharded(affine, [X, Float32Array.of(2), inputs[2]]);
    expect(floats(data[0])).toEqual(X.map((v) => v * 2));
    expect(group.sessionCounts).toEqual({ calls: 12, streams: 2 });
  });

  test("a worker that serves no more sessions: a group still forms, and calls by ExecuteSharded", async () => {
    const alone = await startWorker([
      "--devices",
      "4",
      "--allow-module",
      EXAMPLES,
      "--max-sessions",
      "1",
    ]);
    const own = new Mesh(new DeviceList([0, 1, 2, 3]), [4], ["x"]);
    const on = (...entries: (string | null)[]) =>
      new NamedSharding(own, new PartitionSpec(...entries));
    const program: Program = {
      function: new FunctionRef(EXAMPLES, "affine"),
      inputs: callInputs([
        new ShapeDtypeStruct([8, 4], "float32", on("x")),
        new ShapeDtypeStruct([], "float32", on()),
        new ShapeDtypeStruct([4], "float32", on()),
      ]),
      devices: own.devices,
    };
    const shift = Float32Array.of(1, 2, 3, 4);
    const first = await WorkerGroup.connect([alone.target]); // takes the worker's one session
    const second = await WorkerGroup.connect([alone.target]); // refused one: streams
    try {
      for (const group of [first, second]) {
        const { data } = await group.executeSharded(program, [X, Float32Array.of(3), shift]);
        expect(floats(data[0])).toEqual(X.map((v, j) => v * 3 + shift[j % 4]));
      }
      expect(first.sessionCounts).toEqual({ calls: 1, streams: 1 });
      expect(second.sessionCounts).toEqual({ calls: 0, streams: 0 });
      expect([first.transportName, second.transportName]).toEqual(["sessions", "streams"]);
    } finally {
      first.close();
      second.close();
    }
  });

  test("two workers that are not one job are refused, naming why; one version all accept, or none", async () => {
    const alone = await Promise.all([
      startWorker(["--devices", "4", "--max-version", "0"]),
      startWorker(["--devices", "4"]),
      startWorker(["--devices", "4", "--min-version", "1"]),
    ]);
    const [old, plain, newer] = alone;
    // The plain worker alone would speak the newest; with one that stops at 1.0, both speak 1.0.
    const clients = await connectAll([plain.target, old.target], {});
    expect(clients.map((c) => c.version)).toEqual([0, 0]);
    for (const c of clients) c.close();
    const mismatch = await connectAll([old.target, newer.target], {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(mismatch).toBeInstanceOf(VersionMismatchError);
    expect((mismatch as Error).message).toBe(
      `no colocated.v1 version that every worker accepts: ${old.target} supports 1.0–1.0, ${newer.target} 1.1–1.${SCHEMA_MINOR_VERSION}`,
    );
    const error = await connect([old, plain]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GroupTopologyError);
    expect(error).toMatchObject({
      kind: "process-count",
      message: "2 workers, but their job has 1 process: give one worker per process",
    });
    // Each alone is a job of one process: a group of one.
    const one = await connect([plain]);
    expect(one.members.map((m) => [m.processIndex, m.devices.length])).toEqual([[0, 4]]);
  });

  test("with mutual TLS, a group connects and calls as a single client does, relayed too; without a certificate it cannot", async () => {
    const certs = mkdtempSync(join(tmpdir(), "worker-group-tls-"));
    execFileSync("bash", [join(ROOT, "scripts", "test-certs.sh"), certs]);
    const pem = (name: string) => readFileSync(join(certs, name));
    const tlsFlags = [
      "--tls-cert",
      join(certs, "server.pem"),
      "--tls-key",
      join(certs, "server.key"),
    ];
    // A relay reaches the other member as a client of its: the test client certificate.
    const relayFlags = [
      ...["--relay-cert", join(certs, "client.pem"), "--relay-key", join(certs, "client.key")],
      ...["--relay-ca", join(certs, "ca.pem")],
    ];
    const secure = await startJob(2, 4, [
      ...["--allow-module", EXAMPLES, ...tlsFlags, "--client-ca", join(certs, "ca.pem")],
      ...relayFlags,
    ]);
    const targets = secure.map((w) => w.target);
    const tls = { ca: pem("ca.pem"), cert: pem("client.pem"), key: pem("client.key") };
    const program = example("summarize", [f32([8, 4], "x", "y"), f32([8, 4], "x")]);
    for (const relayFanout of [0, 2]) {
      const group = await WorkerGroup.connect(targets, { tls, deadlineMs: 60_000, relayFanout });
      groups.push(group);
      expect(group.relays).toBe(relayFanout ? 1 : 0);
      const { data } = await group.executeSharded(program, [X, Y]);
      expect(new Int32Array(data[0].buffer)[0]).toBe(X.filter((v) => v > 0).length);
      expect(group.sessionCounts).toEqual({ calls: 2, streams: 2 });
    }
    const refused = await WorkerGroup.connect(targets, {
      tls: { ca: pem("ca.pem") },
      deadlineMs: 10_000,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(WorkerError);
    expect((refused as WorkerError).code).toBe(status.UNAVAILABLE);
  });

  // Last: it kills process 1, which breaks the job for good.
  test("a member killed mid-call fails the call naming it, cancels the other, and is reported dead", async () => {
    const group = await connect(job);
    const program = example("block_until_released", [f32([8, 4], "x", "y")]);
    const blocked = whenStderrSays(job[1], "block_until_released: blocked");
    const call = group.executeSharded(program, [X], { deadlineMs: 120_000 });
    const outcome = call.then(
      () => "the call returned",
      (e: unknown) => e,
    );
    await Promise.race([blocked, outcome]);
    job[1].process.kill("SIGKILL");
    const error = await outcome;
    expect(error).toBeInstanceOf(MemberError);
    const failed = error as MemberError;
    expect(failed.member).toMatchObject({ target: job[1].target, processIndex: 1 });
    expect(failed.code).toBe(status.UNAVAILABLE);
    expect(failed.message).toContain(`member process 1 (${job[1].target}) failed: `);
    expect(failed.message).toContain(`cancelled on process 0 (${job[0].target})`);
    expect(failed.cancelled.map((m) => m.processIndex)).toEqual([0]);
    const health = await group.alive({ deadlineMs: 10_000 });
    expect(health.map((h) => [h.member.processIndex, h.alive])).toEqual([
      [0, true],
      [1, false],
    ]);
  });
});
