import { status } from "@grpc/grpc-js";
import {
  CallQueue,
  checkQueueOptions,
  DEFAULT_MAX_QUEUED_CALLS,
  workerLimits,
} from "../src/rpc/client/call-queue";
import { WorkerError } from "../src/rpc/errors";

// The client's queue on its own, with calls the test ends itself; test/rpc-backpressure.test.ts
// runs it against a real worker.

const CALL = { target: "127.0.0.1:5000", method: "Execute", deadlineMs: 60_000 };
const WHERE = "Execute on 127.0.0.1:5000 failed";

/** Calls whose sends are recorded, each answering its name once the test ends it. */
class Calls {
  readonly sent: string[] = [];
  readonly left = new Map<string, number>();
  private readonly ends = new Map<string, () => void>();

  constructor(private readonly queue: CallQueue) {}

  run(name: string, bytes = 0, call: Partial<typeof CALL> & { signal?: AbortSignal } = {}) {
    return this.queue.run(bytes, { ...CALL, ...call }, (leftMs) => {
      this.sent.push(name);
      this.left.set(name, leftMs);
      return new Promise<string>((resolve) => this.ends.set(name, () => resolve(name)));
    });
  }

  end(name: string): void {
    this.ends.get(name)?.();
  }
}

/** Lets every promise callback and I/O callback that is due run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** The rejection of a promise, which must be a WorkerError. */
async function refusal(promise: Promise<unknown>): Promise<WorkerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkerError);
  return error as WorkerError;
}

describe("the client's queue for a worker's limits", () => {
  test("without limits (an older worker) every call goes at once", async () => {
    const calls = new Calls(new CallQueue(undefined));
    const all = ["a", "b", "c", "d", "e"].map((name) => calls.run(name, 1 << 40));
    await settle();
    expect(calls.sent).toEqual(["a", "b", "c", "d", "e"]);
    for (const name of calls.sent) calls.end(name);
    expect(await Promise.all(all)).toEqual(["a", "b", "c", "d", "e"]);
  });

  test("at most max_concurrent_calls go at once, the others in the order made", async () => {
    const queue = new CallQueue({ maxConcurrentCalls: 2, maxInflightBytes: 0 });
    const calls = new Calls(queue);
    const all = ["a", "b", "c", "d", "e"].map((name) => calls.run(name));
    await settle();
    expect([calls.sent, queue.queued]).toEqual([["a", "b"], 3]);
    calls.end("b");
    await settle();
    expect(calls.sent).toEqual(["a", "b", "c"]);
    calls.end("a");
    calls.end("c");
    await settle();
    expect([calls.sent, queue.queued]).toEqual([["a", "b", "c", "d", "e"], 0]);
    calls.end("d");
    calls.end("e");
    expect(await Promise.all(all)).toEqual(["a", "b", "c", "d", "e"]);
    expect(calls.left.get("a")).toBe(CALL.deadlineMs); // it did not wait: its whole deadline
  });

  test("bytes: a call waits for room, smaller ones wait behind it, a larger one goes alone", async () => {
    const queue = new CallQueue({ maxConcurrentCalls: 0, maxInflightBytes: 100 });
    const calls = new Calls(queue);
    const all = [calls.run("a", 60), calls.run("b", 60), calls.run("c", 10)];
    await settle();
    expect([calls.sent, queue.queued]).toEqual([["a"], 2]); // c fits, but b is first
    calls.end("a");
    await settle();
    expect(calls.sent).toEqual(["a", "b", "c"]);
    all.push(calls.run("big", 500)); // more than the whole limit: it waits until none is in flight
    calls.end("b");
    await settle();
    expect([calls.sent, queue.queued]).toEqual([["a", "b", "c"], 1]);
    calls.end("c");
    await settle();
    expect(calls.sent).toEqual(["a", "b", "c", "big"]);
    calls.end("big");
    expect(await Promise.all(all)).toEqual(["a", "b", "c", "big"]);
  });

  test("a call beyond a full queue fails at once, naming the option, and is never sent", async () => {
    const limits = { maxConcurrentCalls: 1, maxInflightBytes: 1 << 30 };
    const calls = new Calls(new CallQueue(limits, 1));
    const a = calls.run("a");
    const b = calls.run("b");
    const error = await refusal(calls.run("c"));
    expect(error.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error.message).toBe(
      `${WHERE}: RESOURCE_EXHAUSTED: this client's queue for the worker's limits (--max-concurrent-calls 1, --max-inflight-bytes 1073741824) is full: 1 calls wait, its bound (maxQueuedCalls); retry later`,
    );
    calls.end("a");
    await settle();
    calls.end("b");
    expect(await Promise.all([a, b])).toEqual(["a", "b"]);
    expect(calls.sent).toEqual(["a", "b"]);

    const none = new Calls(new CallQueue(limits, 0)); // no call may wait
    const only = none.run("a");
    expect((await refusal(none.run("b"))).code).toBe(status.RESOURCE_EXHAUSTED);
    none.end("a");
    expect(await only).toBe("a");
  });

  test("a call aborted while it waits fails with CANCELLED, unsent, and the next moves up", async () => {
    const queue = new CallQueue({ maxConcurrentCalls: 1, maxInflightBytes: 0 });
    const calls = new Calls(queue);
    const abort = new AbortController();
    const a = calls.run("a");
    const b = refusal(calls.run("b", 0, { signal: abort.signal }));
    const c = calls.run("c");
    await settle();
    expect(queue.queued).toBe(2);
    abort.abort();
    const error = await b;
    expect(error.code).toBe(status.CANCELLED);
    expect(error.message).toBe(
      `${WHERE}: CANCELLED: the call waited in this client's queue for the worker's limits (--max-concurrent-calls 1) and was never sent (the caller aborted it)`,
    );
    expect(queue.queued).toBe(1);
    calls.end("a");
    await settle();
    calls.end("c");
    expect(await Promise.all([a, c])).toEqual(["a", "c"]);
    expect(calls.sent).toEqual(["a", "c"]);
    // Aborted before it would wait: it fails at once.
    const d = calls.run("d");
    expect((await refusal(calls.run("e", 0, { signal: abort.signal }))).code).toBe(
      status.CANCELLED,
    );
    calls.end("d");
    expect(await d).toBe("d");
  });

  describe("with Jest's fake clock", () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    test("a call whose deadline passes while it waits fails with DEADLINE_EXCEEDED, unsent", async () => {
      const queue = new CallQueue({ maxConcurrentCalls: 1, maxInflightBytes: 0 });
      const calls = new Calls(queue);
      const a = calls.run("a");
      const late = refusal(calls.run("late", 0, { deadlineMs: 500 }));
      const patient = calls.run("patient", 0, { deadlineMs: 10_000 });
      await jest.advanceTimersByTimeAsync(500);
      const error = await late;
      expect(error.code).toBe(status.DEADLINE_EXCEEDED);
      expect(error.message).toBe(
        `${WHERE}: DEADLINE_EXCEEDED: the call waited in this client's queue for the worker's limits (--max-concurrent-calls 1) and was never sent (no answer within 500 ms)`,
      );
      await jest.advanceTimersByTimeAsync(3_500);
      calls.end("a");
      await jest.advanceTimersByTimeAsync(0);
      expect(calls.sent).toEqual(["a", "patient"]);
      expect(calls.left.get("patient")).toBe(6_000); // what its deadline left after 4 s waiting
      calls.end("patient");
      expect(await Promise.all([a, patient])).toEqual(["a", "patient"]);
    });
  });

  test("the options and the limits as GetVersion states them", () => {
    expect(checkQueueOptions({})).toBe(DEFAULT_MAX_QUEUED_CALLS);
    expect(checkQueueOptions({ maxQueuedCalls: 0 })).toBe(0);
    expect(() => checkQueueOptions({ maxQueuedCalls: -1 })).toThrow(
      new RangeError("maxQueuedCalls is a non-negative integer, not -1"),
    );
    expect(() => checkQueueOptions({ maxQueuedCalls: 1.5 })).toThrow(RangeError);
    expect(workerLimits(undefined)).toBeUndefined();
    expect(workerLimits({ maxConcurrentCalls: 3, maxInflightBytes: 5n << 30n })).toEqual({
      maxConcurrentCalls: 3,
      maxInflightBytes: 5 * 2 ** 30,
    });
  });
});
