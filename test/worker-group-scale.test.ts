import { status } from "@grpc/grpc-js";
import { ExecuteStart } from "../gen/ts/colocated/v1/service";
import * as encode from "../src/encode";
import { GroupTopologyError, MemberError, WorkerGroup } from "../src/rpc";
import * as request from "../src/rpc/messages/sharded-request";
import { ShardLayout } from "../src/rpc/sharded/shard-layout";
import * as shardIndices from "../src/shard-indices";
import {
  FixedJob,
  type FixedServer,
  startFixedServers,
  stopFixedServers,
} from "./support/group-fixed-service";
import { groupCalls } from "./support/group-programs";

// What keeps a WorkerGroup's cost per member flat, against fixed-answer members:
// real gRPC servers in this process that answer as a job's workers would, from a fixed
// topology, without JAX (test/support/group-fixed-service.ts). Counts, never times.

const PROCESSES = 4;
const DEVICES = 2;

describe.each([
  ["a session to each member", 0],
  ["sessions carried by relays of two members", 2],
])("a WorkerGroup of fixed-answer members over %s", (_, relayFanout) => {
  let job: FixedJob;
  let servers: FixedServer[];
  let group: WorkerGroup;
  const calls = () =>
    groupCalls(
      group.topology.devices.map((d) => d.id),
      DEVICES,
      8,
      true,
    );

  beforeAll(async () => {
    job = new FixedJob(PROCESSES, DEVICES);
    servers = await startFixedServers(job, [0, 1, 2, 3]);
    group = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { deadlineMs: 60_000, relayFanout },
    );
  });

  afterEach(() => {
    jest.restoreAllMocks();
    for (let p = 0; p < PROCESSES; p++) job.setMode(p, "ok");
  });

  afterAll(() => {
    group.close();
    stopFixedServers(servers);
  });

  test("forms one job from answers compared by bytes, each member its process", () => {
    expect(group.topology.processCount).toBe(PROCESSES);
    expect(group.members.map((m) => [m.processIndex, m.devices.map((d) => d.id)])).toEqual([
      [0, [0, 1]],
      [1, [2048, 2049]],
      [2, [4096, 4097]],
      [3, [6144, 6145]],
    ]);
  });

  test("a member listing other devices is named, from the answers decoded one by one", async () => {
    const other = new FixedJob(PROCESSES, 1);
    const [odd] = await startFixedServers(other, [3]);
    try {
      const targets = [...servers.slice(0, 3).map((s) => s.target), odd.target];
      const error = await WorkerGroup.connect(targets).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(GroupTopologyError);
      expect(error).toMatchObject({ kind: "devices" });
      expect((error as Error).message).toContain(`${servers[0].target} and ${odd.target}`);
    } finally {
      stopFixedServers([odd]);
    }
  });

  test("the program is lowered and encoded once for every member, each member's call once", async () => {
    const { small } = calls();
    const lower = jest.spyOn(encode, "encodeProgram");
    const start = jest.spyOn(ExecuteStart, "encode");
    const chunk = jest.spyOn(request, "chunkFrame");
    const loads = group.programLoads;
    for (let i = 0; i < 3; i++) await group.executeSharded(small.program, small.inputs);
    expect(lower).toHaveBeenCalledTimes(1);
    // The start once for every member; each member's session call written once, its chunks
    // too, and filled in each call.
    expect(start).toHaveBeenCalledTimes(1);
    expect(chunk).toHaveBeenCalledTimes(3 * PROCESSES); // summarize: 3 input shards a member
    expect(group.programLoads - loads).toBe(PROCESSES); // loaded once on each
  });

  test("small calls go over one session per member, kept for every call; large ones by streams", async () => {
    const { small } = calls();
    const before = group.sessionCounts;
    for (let i = 0; i < 5; i++) await group.executeSharded(small.program, small.inputs);
    const after = group.sessionCounts;
    expect(after.calls - before.calls).toBe(5 * PROCESSES);
    expect(after.streams).toBe(PROCESSES); // opened at the first call, never again
    // 1,032 rows of 1,032 floats over 8 devices: more than 1 MiB a member, so ExecuteSharded.
    const large = groupCalls(
      group.topology.devices.map((d) => d.id),
      DEVICES,
      1032,
      true,
    ).array;
    const start = jest.spyOn(request, "startMessage");
    await group.executeSharded(large.program, large.inputs);
    expect(group.sessionCounts.calls).toBe(after.calls);
    expect(start).toHaveBeenCalledTimes(1); // one ExecuteStart for every member's stream
  });

  test("the controller keeps a stream per relay, or per member without relays", async () => {
    const { small } = calls();
    const before = { ...job.opened };
    const own = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { relayFanout },
    );
    try {
      expect(own.relays).toBe(relayFanout ? 2 : 0);
      const { data } = await own.executeSharded(small.program, small.inputs);
      expect(data.map((d) => d.length)).toEqual([4, 256, 64, 64, 256]);
    } finally {
      own.close();
    }
    const opened = {
      sessions: job.opened.sessions - before.sessions,
      relays: job.opened.relays - before.relays,
    };
    expect(opened).toEqual(relayFanout ? { sessions: 0, relays: 2 } : { sessions: 4, relays: 0 });
  });

  test("without sessions (asked, or a member that serves none) every call is a stream per member", async () => {
    const { small } = calls();
    const off = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { sessions: false, relayFanout },
    );
    const noSessions = await startFixedServers(new FixedJob(PROCESSES, DEVICES), [0, 1, 2, 3], {
      sessions: false,
    });
    const old = await WorkerGroup.connect(
      noSessions.map((s) => s.target),
      { relayFanout },
    );
    try {
      const expected = await group.executeSharded(small.program, small.inputs);
      for (const other of [off, old]) {
        const { data, outputSpecsPayload } = await other.executeSharded(
          small.program,
          small.inputs,
        );
        // The replicated count comes from every member, each of whose bytes is its own index here.
        expect(data.slice(1)).toEqual(expected.data.slice(1));
        expect(outputSpecsPayload).toEqual(expected.outputSpecsPayload);
        expect(other.sessionCounts).toEqual({ calls: 0, streams: 0 });
      }
    } finally {
      off.close();
      old.close();
      stopFixedServers(noSessions);
    }
  });

  test("a member that refuses a session at connect: the group calls by streams, and no call fails", async () => {
    const { small } = calls();
    job.setMode(2, "drop"); // refuses a new session, answers ExecuteSharded
    const own = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { relayFanout },
    );
    try {
      expect([own.transportName, own.relays, own.sessionCounts]).toEqual([
        "streams",
        0,
        { calls: 0, streams: 0 },
      ]);
      const { data } = await own.executeSharded(small.program, small.inputs);
      expect(data.map((d) => d.length)).toEqual([4, 256, 64, 64, 256]);
    } finally {
      own.close();
    }
  });

  test("a member out of its relay's reach: the group keeps a session to each member, and no call fails", async () => {
    const { small } = calls();
    job.setMode(3, "unreached"); // answers, but its relay reports its session unreachable
    const own = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { relayFanout },
    );
    try {
      const { data } = await own.executeSharded(small.program, small.inputs);
      expect(data.map((d) => d.length)).toEqual([4, 256, 64, 64, 256]);
      expect([own.transportName, own.relays, own.sessionCounts]).toEqual([
        "sessions",
        0,
        { calls: 4, streams: 4 },
      ]);
    } finally {
      own.close();
    }
  });

  test("a session that breaks fails its call; a member that then refuses a new one moves the group to streams", async () => {
    const { small } = calls();
    const own = await WorkerGroup.connect(
      servers.map((s) => s.target),
      { relayFanout },
    );
    try {
      await own.executeSharded(small.program, small.inputs);
      expect(own.transportName).toBe(relayFanout ? "relays" : "sessions");
      job.setMode(1, "drop"); // ends its session at the next call, and refuses another
      const outcome = () =>
        own.executeSharded(small.program, small.inputs).then(
          () => undefined,
          (e: unknown) => e as MemberError,
        );
      const dropped = await outcome();
      expect(dropped).toBeInstanceOf(MemberError);
      expect([dropped?.member.processIndex, dropped?.code]).toEqual([1, status.UNAVAILABLE]);
      const refused = await outcome(); // the next call opens a new session, which is refused
      expect([refused?.member.processIndex, refused?.code]).toEqual([1, status.RESOURCE_EXHAUSTED]);
      expect(refused?.message).toContain("--max-sessions");
      const { data } = await own.executeSharded(small.program, small.inputs); // by streams
      expect(data.map((d) => d.length)).toEqual([4, 256, 64, 64, 256]);
      expect(own.sessionCounts).toEqual({ calls: 0, streams: 0 }); // its sessions are closed
      expect(own.transportName).toBe("streams");
    } finally {
      own.close();
    }
  });

  test("a program the member no longer holds is loaded again and the call made once more", async () => {
    const { small } = calls();
    await group.executeSharded(small.program, small.inputs);
    const loads = group.programLoads;
    job.forget();
    const { data } = await group.executeSharded(small.program, small.inputs);
    expect(data.map((d) => d.length)).toEqual([4, 256, 64, 64, 256]);
    expect(group.programLoads - loads).toBe(PROCESSES); // each member answered NOT_FOUND once
  });

  test("each array's shards are found once per program, not once per member per call", async () => {
    const warm = calls().array; // the same bytes: the members (in this process) find theirs now
    await group.executeSharded(warm.program, warm.inputs);
    const { array } = calls();
    const distinct = jest.spyOn(shardIndices, "distinctShards");
    for (let i = 0; i < 3; i++) await group.executeSharded(array.program, array.inputs);
    // affine: x and shift sharded (scale replicated: one shard, found the same way), and its
    // one output: four arrays in all, each once.
    expect(distinct).toHaveBeenCalledTimes(4);
  });

  test("each member's shards are read from the caller's arrays in place, each byte once", async () => {
    const { array } = calls();
    await group.executeSharded(array.program, array.inputs); // planned
    const copy = jest.spyOn(ShardLayout.prototype, "copyTo");
    await group.executeSharded(array.program, array.inputs);
    const read = new Map<ArrayBufferLike, number>();
    for (const [global, , length] of copy.mock.calls) {
      read.set(global.buffer, (read.get(global.buffer) ?? 0) + length);
    }
    // x: each of the 8 shards once; scale: to every member; shift: each member its 2 halves.
    const [x, scale, shift] = array.inputs;
    expect(read).toEqual(
      new Map([
        [x.buffer, x.byteLength],
        [scale.buffer, PROCESSES * scale.byteLength],
        [shift.buffer, PROCESSES * shift.byteLength],
      ]),
    );
  });

  test("every member's output shards land in place in one buffer per output", async () => {
    const { small } = calls();
    const rows = 4 * PROCESSES;
    const into = [new Int32Array(1), new Float32Array(rows * 4), new Uint8Array(rows * 4)];
    const { data, outputs } = await group.executeSharded(small.program, small.inputs, {
      into: [...into, new Float32Array(rows), new Float32Array(rows * 4)],
    });
    expect(outputs.leaves.map((l) => l.shape)).toEqual([
      [],
      [rows, 4],
      [rows, 4],
      [rows],
      [rows, 4],
    ]);
    // A fixed-answer member fills its shards with its process index: rows 4p to 4p+3 are p's.
    const doubled = data[1];
    expect(doubled.buffer).toBe(into[1].buffer);
    for (let p = 0; p < PROCESSES; p++) {
      const rowBytes = 4 * 4;
      const mine = doubled.subarray(4 * p * rowBytes, 4 * (p + 1) * rowBytes);
      expect(mine.every((b) => b === p)).toBe(true);
    }
  });

  test("a member that fails fails the call at once, naming it, and the others are cancelled", async () => {
    const { small } = calls();
    await group.executeSharded(small.program, small.inputs); // loaded everywhere
    for (const p of [0, 1, 3]) job.setMode(p, "hang");
    job.setMode(2, "error");
    const cancelled = new Set<number>();
    const hanging = [0, 1, 3];
    const allCancelled = new Promise<void>((resolve) => {
      job.events.on("cancelled", (p: number) => {
        cancelled.add(p);
        if (hanging.every((h) => cancelled.has(h))) resolve();
      });
    });
    const error = await group.executeSharded(small.program, small.inputs).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MemberError);
    const failed = error as MemberError;
    expect(failed.member.processIndex).toBe(2);
    expect(failed.code).toBe(status.INTERNAL);
    expect(failed.message).toContain(`member process 2 (${servers[2].target}) failed: `);
    expect(failed.cancelled.map((m) => m.processIndex)).toEqual([0, 1, 3]);
    await allCancelled; // the hanging members' servers saw their streams cancelled
    job.events.removeAllListeners("cancelled");
  });

  test("a member that never answers fails the call by its one deadline, naming it", async () => {
    const { small } = calls();
    await group.executeSharded(small.program, small.inputs);
    job.setMode(1, "hang");
    const cancelled = new Promise<void>((resolve) => {
      const seen = (p: number) => {
        if (p !== 1) return;
        job.events.off("cancelled", seen);
        resolve();
      };
      job.events.on("cancelled", seen);
    });
    const error = await group
      .executeSharded(small.program, small.inputs, { deadlineMs: 1_000 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(MemberError);
    expect((error as MemberError).member.processIndex).toBe(1);
    expect((error as MemberError).code).toBe(status.DEADLINE_EXCEEDED);
    await cancelled; // its server saw the stream end at the deadline
  });
});
