import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { MemberError, WorkerGroup } from "../../src/rpc";
import { type GroupCall, groupCalls } from "../../test/support/group-programs";
import { answerApart, measureApart } from "./group-apart";
import { type FixedMembers, startFixedMembers } from "./group-fixed-servers";
import { measureFloor } from "./group-floor";
import {
  type CallCost,
  callCost,
  callsFor,
  costOnGroup,
  WARM_UP_MEMBER_CALLS,
  WARM_UP_SMALL_MEMBER_CALLS,
} from "./group-timing";

/**
 * The controller alone, from 16 members to 1,024: a WorkerGroup over
 * fixed-answer members (test/support/group-fixed-service.ts), each a real gRPC server in processes
 * apart from this one, several members a process (bench/group/group-fixed-servers.ts). What it
 * measures is this process: its CPU and memory per member per call, the time to form the
 * group, and a call in which one member fails. Each group is measured in a controller process
 * of its own (measureFixedApart), so that no size is charged for what the bench did before it.
 */

/** A call in which one member fails: how long it took, against its deadline, and whom it named. */
export interface FailedCall {
  /** "error": the member fails the call at once; "hang": it never answers. */
  mode: "error" | "hang";
  member: number;
  deadlineMs: number;
  ms: number;
  /** The process index the MemberError named; undefined when the call did not fail so. */
  named?: number;
}

/** One group of fixed-answer members. */
export interface FixedRow {
  members: number;
  devicesPerMember: number;
  /** Processes the members' servers ran in. */
  serverProcesses: number;
  formMs: number;
  small: CallCost;
  array: CallCost;
  /** The small program's calls as bare HTTP/2 streams, the transport alone (group-floor.ts). */
  floor: CallCost;
  /** The small program's calls without sessions: an ExecuteSharded stream per member per call. */
  streams: CallCost;
  /** Members that relayed the others' sessions (0: a session from the controller to each). */
  relays: number;
  /** The small program's calls over a session from the controller to each member, no relays. */
  direct: CallCost;
  /** This process's memory grown per member, once formed and called: RSS, and V8's heap plus external. */
  rssPerMember: number;
  heapPerMember: number;
  failed: FailedCall[];
}

/** A full GC, so memory before and after compares what stays. */
function collect(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

function memory(): { rss: number; heap: number } {
  collect();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed + m.external };
}

/** Times a call in which `member` fails in `mode`, and notes whom the error named. */
async function failedCall(
  group: WorkerGroup,
  servers: FixedMembers,
  call: GroupCall,
  member: number,
  mode: FailedCall["mode"],
  deadlineMs: number,
): Promise<FailedCall> {
  await servers.setMode(member, mode);
  const start = performance.now();
  const error = await group.executeSharded(call.program, call.inputs, { deadlineMs }).then(
    () => undefined,
    (e: unknown) => e,
  );
  const ms = performance.now() - start;
  await servers.setMode(member, "ok");
  const named = error instanceof MemberError ? error.member.processIndex : undefined;
  return { mode, member, deadlineMs, ms, named };
}

/**
 * Measures one group of `members` fixed-answer members of `devices` devices each. The call in
 * which a member hangs gets a deadline of four times a call's median (at least 2 s), so that
 * only the hanging member misses it.
 */
export async function measureFixed(
  members: number,
  devices: number,
  side: number,
  calls: { small: number; array: number },
  progress: (task: string) => void,
): Promise<FixedRow> {
  progress(`group: starting ${members} fixed-answer members of ${devices} devices`);
  const servers = await startFixedMembers(members, devices);
  try {
    const before = memory();
    progress(`group: forming a group of ${members} fixed-answer members`);
    const start = performance.now();
    const group = await WorkerGroup.connect(servers.targets, { deadlineMs: 120_000 });
    const formMs = performance.now() - start;
    try {
      const ids = group.topology.devices.map((d) => d.id);
      const { small, array } = groupCalls(ids, devices, side, true);
      progress(`group: calls over ${members} fixed-answer members of ${devices} devices`);
      // Small groups make more calls, so that every size times thousands of streams; and every
      // size warms up on as many member calls, so that V8 has optimized the call path (its
      // compiler's threads count in this process's CPU) before the calls are timed.
      const streams = (n: number) => callsFor(members, 200 * n, n);
      const warmUp = callsFor(members, WARM_UP_SMALL_MEMBER_CALLS, 10);
      const smallCost = await callCost(
        () => group.executeSharded(small.program, small.inputs),
        streams(calls.small),
        warmUp,
      );
      // What the group holds a member, its call path warm: not the array's buffers, which are
      // per call.
      const after = memory();
      const arrayCost = await callCost(
        () => group.executeSharded(array.program, array.inputs),
        streams(calls.array),
        callsFor(members, WARM_UP_MEMBER_CALLS, 10),
      );
      progress(`group: a call in which one of ${members} members fails`);
      const hangMs = Math.max(2_000, Math.ceil((4 * smallCost.p50Ms) / 100) * 100);
      const failed = [
        await failedCall(group, servers, small, members >> 1, "error", 30_000),
        await failedCall(group, servers, small, members - 1, "hang", hangMs),
      ];
      const smallCall = (g: WorkerGroup) => g.executeSharded(small.program, small.inputs);
      progress(`group: a stream per member per call to ${members} fixed-answer members`);
      const streamsCost = await costOnGroup(
        servers.targets,
        { deadlineMs: 120_000, sessions: false },
        smallCall,
        streams(calls.small),
        warmUp,
      );
      progress(`group: a session from the controller to each of ${members} fixed-answer members`);
      const relays = group.relays;
      group.close(); // its connections' state out of the way of the next group's
      const directCost = await costOnGroup(
        servers.targets,
        { deadlineMs: 120_000, relayFanout: 0 },
        smallCall,
        streams(calls.small),
        warmUp,
      );
      progress(`group: bare HTTP/2 streams to ${members} fixed-answer members`);
      const memberOf = new Map<number, number>();
      group.members.forEach((m, i) => {
        for (const d of m.devices) memberOf.set(d.id, i);
      });
      const floor = await measureFloor(
        servers.targets,
        group.version,
        small.program,
        small.inputs,
        memberOf,
        streams(calls.small),
      );
      return {
        members,
        devicesPerMember: devices,
        serverProcesses: servers.processes,
        formMs,
        small: smallCost,
        array: arrayCost,
        floor,
        streams: streamsCost,
        relays,
        direct: directCost,
        rssPerMember: (after.rss - before.rss) / members,
        heapPerMember: (after.heap - before.heap) / members,
        failed,
      };
    } finally {
      group.close();
    }
  } finally {
    await servers.stop();
  }
}

/** measureFixed in a controller process of its own (bench/group/group-apart.ts). */
export function measureFixedApart(...args: Parameters<typeof measureFixed>): Promise<FixedRow> {
  const [members, devices, side, calls, progress] = args;
  const argv = [members, devices, side, calls.small, calls.array];
  return measureApart<FixedRow>(__filename, argv, progress);
}

if (require.main === module) {
  const [members, devices, side, small, array] = process.argv.slice(2).map(Number);
  answerApart((progress) => measureFixed(members, devices, side, { small, array }, progress));
}
