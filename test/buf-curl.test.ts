import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startWorker,
  stopAllWorkers,
} from "./rpc-worker";

// A client this project did not write, buf curl, calls the real worker with no .proto files:
// everything it knows of the schema comes from the worker's server reflection.
jest.setTimeout(30_000);

const BUF = join(ROOT, "node_modules", ".bin", "buf");
let worker: RunningWorker;
let bare: RunningWorker;

beforeAll(async () => {
  ensurePythonEnv();
  [worker, bare] = await Promise.all([startWorker([]), startWorker(["--no-reflection"])]);
}, 900_000);

afterAll(() => stopAllWorkers());

/** Runs `buf curl` over plaintext HTTP/2 gRPC; resolves with its exit code, stdout and stderr. */
async function bufCurl(target: string, ...args: string[]) {
  const argv = ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args];
  const url = (path: string) => `http://${target}${path}`;
  const last = argv.length - 1;
  if (argv[last].startsWith("/")) argv[last] = url(argv[last]);
  else argv.push(url(""));
  try {
    const { stdout, stderr } = await promisify(execFile)(BUF, argv, { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("buf curl through server reflection", () => {
  test("lists the worker's methods, Health's and reflection's", async () => {
    const run = await bufCurl(worker.target, "--list-methods");
    expect(run.code).toBe(0);
    const methods = run.stdout.trim().split("\n");
    expect(methods).toEqual(
      expect.arrayContaining([
        "colocated.v1.ColocatedWorkerService/Execute",
        "colocated.v1.ColocatedWorkerService/GetVersion",
        "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch",
        "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      ]),
    );
  });

  test("GetVersion negotiates with a range written as JSON", async () => {
    const run = await bufCurl(
      worker.target,
      "-d",
      '{"client": {"minVersion": 0, "maxVersion": 0}}',
      "/colocated.v1.ColocatedWorkerService/GetVersion",
    );
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer.version ?? 0).toBe(0);
    expect(answer.server.maxVersion).toBeGreaterThanOrEqual(1);
  });

  test.each(["", "colocated.v1.ColocatedWorkerService"])(
    "Health says SERVING for %j",
    async (service) => {
      const run = await bufCurl(
        worker.target,
        "-d",
        JSON.stringify({ service }),
        "/grpc.health.v1.Health/Check",
      );
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ status: "SERVING" });
    },
  );

  test("an Execute without a program comes back INVALID_ARGUMENT, as gRPC status JSON", async () => {
    const run = await bufCurl(
      worker.target,
      "-d",
      "{}",
      "/colocated.v1.ColocatedWorkerService/Execute",
    );
    expect(run.code).not.toBe(0);
    expect(JSON.parse(run.stderr)).toMatchObject({ code: "invalid_argument" });
  });

  test("with --no-reflection, buf curl cannot find the schema", async () => {
    const run = await bufCurl(bare.target, "/colocated.v1.ColocatedWorkerService/GetVersion");
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      'failed to find service named "colocated.v1.ColocatedWorkerService"',
    );
  });
});
