import { GetVersionResponse, type WorkerRuntime } from "../gen/ts/colocated/v1/service";
import { describeRuntime } from "../src/cli/topology";
import { GroupRuntimeError, WorkerClient, WorkerGroup } from "../src/rpc";
import { checkRuntimes } from "../src/rpc/group/group-runtime";
import { RecordingProxy } from "./fuzz/rpc-proxy";
import { ensurePythonEnv, type RunningWorker, startWorker, stopAllWorkers } from "./rpc-worker";

// What a worker runs (its GetVersion answer's WorkerRuntime), and a group that refuses to form
// when its members differ in jaxlib or Python minor (src/rpc/group/group-runtime.ts).

const RUNTIME: WorkerRuntime = {
  colocatedWire: "0.1.0",
  python: "3.11.7",
  jax: "0.10.2",
  jaxlib: "0.10.2",
  numpy: "2.4.0",
  cloudpickle: "3.1.1",
  platform: "cpu",
  deviceKind: "cpu",
};
const member = (target: string, changes: Partial<WorkerRuntime> = {}) => ({
  target,
  runtime: { ...RUNTIME, ...changes },
});

describe("members' runtimes compared", () => {
  test("the same everywhere: nothing to say", () => {
    expect(checkRuntimes([member("a:1"), member("b:1")])).toEqual([]);
  });

  test.each([
    [{ jaxlib: "0.9.2" }, "jaxlib: 0.10.2 at a:1, c:1; 0.9.2 at b:1"],
    [{ python: "3.12.1" }, "Python minor: 3.11 at a:1, c:1; 3.12 at b:1"],
  ])("%j on one member refuses the group, naming both sides", (changes, said) => {
    const members = [member("a:1"), member("b:1", changes), member("c:1")];
    expect(() => checkRuntimes(members)).toThrow(GroupRuntimeError);
    expect(() => checkRuntimes(members)).toThrow(said);
  });

  test("other differences are reported, one line each, and do not refuse", () => {
    const members = [
      member("a:1"),
      member("b:1", { python: "3.11.9", numpy: "2.3.1", deviceKind: "TPU v5 lite" }),
    ];
    expect(checkRuntimes(members)).toEqual([
      "Python: 3.11.7 at a:1; 3.11.9 at b:1",
      "numpy: 2.4.0 at a:1; 2.3.1 at b:1",
      "device kind: cpu at a:1; TPU v5 lite at b:1",
    ]);
  });

  test("a member too old to say is reported, not refused", () => {
    const members = [member("a:1"), { target: "b:1", runtime: undefined }];
    expect(checkRuntimes(members)).toEqual([
      "runtime: not said by b:1 (workers older than WorkerRuntime)",
    ]);
    expect(describeRuntime(undefined)).toBe("(not said: a worker older than WorkerRuntime)");
  });
});

describe("a real worker's runtime", () => {
  let worker: RunningWorker;

  beforeAll(async () => {
    ensurePythonEnv();
    worker = await startWorker([]);
  }, 120_000);

  afterAll(() => stopAllWorkers());

  test("its version answer says what it runs", async () => {
    const client = await WorkerClient.connect(worker.target);
    try {
      const runtime = client.runtime as WorkerRuntime;
      expect(runtime.platform).toBe("cpu");
      for (const version of [runtime.colocatedWire, runtime.jax, runtime.jaxlib, runtime.numpy]) {
        expect(version).toMatch(/^\d+\.\d+/);
      }
      expect(describeRuntime(runtime)).toContain(`jaxlib ${runtime.jaxlib}`);
    } finally {
      client.close();
    }
  });

  test("a group whose member says another jaxlib does not form, and the error names both", async () => {
    const same = await RecordingProxy.start(worker.target);
    const other = await RecordingProxy.start(worker.target, (path, _i, bytes) => {
      if (!path.endsWith("/GetVersion")) return bytes;
      const answer = GetVersionResponse.decode(bytes);
      answer.runtime = { ...(answer.runtime as WorkerRuntime), jaxlib: "0.9.2" };
      return Buffer.from(GetVersionResponse.encode(answer).finish());
    });
    try {
      const formed = WorkerGroup.connect([same.address, other.address]);
      await expect(formed).rejects.toThrow(GroupRuntimeError);
      await expect(formed).rejects.toThrow(
        new RegExp(`jaxlib: [0-9.]+ at ${same.address}; 0\\.9\\.2 at ${other.address}`),
      );
    } finally {
      same.close();
      other.close();
    }
  });
});
