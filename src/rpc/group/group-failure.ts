import { status } from "@grpc/grpc-js";
import { WorkerError } from "../errors";
import { type GroupMember, MemberError } from "./group-member";

/**
 * Every member's result of one group call; or, when a member fails, a MemberError naming it,
 * with the call cancelled on the others. A failure in time does not say whose it is: a member
 * that answers ABORTED only says that another never reached the call's barrier
 * (python/colocated_wire/worker/job.py), and one whose deadline passed may have waited for
 * the others. So those wait until every member has settled (by the same deadline), then a
 * member that failed otherwise is named, else one that never answered, else one that
 * answered ABORTED. When the caller aborted, the first failure is rejected as it is.
 */
export function settleMembers<T>(
  calls: readonly Promise<T>[],
  cancel: AbortController,
  members: readonly GroupMember[],
  caller: AbortSignal | undefined,
): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const results = new Array<T>(calls.length);
    let left = calls.length;
    let done = false;
    const waited: { member: number; error: Error; blame: number }[] = [];
    const fail = (member: number, error: Error) => {
      done = true;
      cancel.abort();
      const others = members.filter((_, j) => j !== member);
      reject(caller?.aborted ? error : new MemberError(members[member], error, others));
    };
    const settled = () => {
      if (--left > 0 || done) return;
      const [first, ...rest] = waited;
      if (first === undefined) return resolve(results);
      const named = rest.reduce((a, b) => (b.blame > a.blame ? b : a), first);
      fail(named.member, named.error);
    };
    calls.forEach((call, i) => {
      call.then(
        (result) => {
          results[i] = result;
          settled();
        },
        (error: Error) => {
          if (done) return;
          const blame = inTime(error);
          if (caller?.aborted || blame === undefined) return fail(i, error);
          waited.push({ member: i, error, blame });
          settled();
        },
      );
    });
  });
}

/**
 * How much a failure in time blames its member: ABORTED (it waited at the barrier for
 * another) least, DEADLINE_EXCEEDED (it did not answer) more; undefined for any other failure.
 */
function inTime(error: Error): number | undefined {
  if (!(error instanceof WorkerError)) return undefined;
  if (error.code === status.ABORTED) return 0;
  if (error.code === status.DEADLINE_EXCEEDED) return 1;
  return undefined;
}
