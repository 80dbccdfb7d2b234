import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, status } from "@grpc/grpc-js";
import {
  DeviceList,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
} from "../src";
import { callInputs, type TlsOptions, WorkerClient, WorkerError } from "../src/rpc";
import {
  ensurePythonEnv,
  ROOT,
  type RunningWorker,
  startWorker,
  stopAllWorkers,
} from "./rpc-worker";

// A real worker on every interface with --allow-pickle, which it accepts only with mutual TLS,
// called from TypeScript with and without the right certificates.
jest.setTimeout(30_000);

const dir = mkdtempSync(join(tmpdir(), "colocated-wire-tls-"));
const certs = join(dir, "certs");
const other = join(dir, "other-certs");
const pem = (folder: string, name: string) => readFileSync(join(folder, name));
const PYTHON = join(ROOT, ".venv", "bin", "python");

let worker: RunningWorker;
/** 127.0.0.1:PORT: the worker listens on 0.0.0.0, its certificate names 127.0.0.1. */
let target: string;
const clients: WorkerClient[] = [];

function tlsFlags(folder: string): string[] {
  const file = (name: string) => join(folder, name);
  return ["--tls-cert", file("server.pem"), "--tls-key", file("server.key")];
}

beforeAll(async () => {
  ensurePythonEnv();
  for (const folder of [certs, other]) {
    execFileSync("bash", [join(ROOT, "scripts", "test-certs.sh"), folder]);
  }
  const flags = [
    "--host",
    "0.0.0.0",
    "--allow-pickle",
    "--allow-module",
    "colocated_wire.examples",
  ];
  worker = await startWorker([...flags, ...tlsFlags(certs), "--client-ca", join(certs, "ca.pem")]);
  target = worker.target.replace("0.0.0.0", "127.0.0.1");
}, 900_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await stopAllWorkers();
});

async function connect(tls: TlsOptions | undefined): Promise<WorkerClient> {
  const client = await WorkerClient.connect(target, { tls, deadlineMs: 10_000 });
  clients.push(client);
  return client;
}

async function refusal(promise: Promise<unknown>): Promise<WorkerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkerError);
  return error as WorkerError;
}

const mesh = new Mesh(new DeviceList([0, 1, 2, 3, 4, 5, 6, 7]), [2, 4], ["x", "y"]);
const X = new ShapeDtypeStruct(
  [8, 4],
  "float32",
  new NamedSharding(mesh, new PartitionSpec("x", "y")),
);

describe("mutual TLS", () => {
  test("a client with a certificate from the worker's --client-ca negotiates and runs a program", async () => {
    const client = await connect({
      ca: pem(certs, "ca.pem"),
      cert: pem(certs, "client.pem"),
      key: pem(certs, "client.key"),
    });
    const program = {
      function: new FunctionRef("colocated_wire.examples", "summarize"),
      inputs: callInputs([X, X]),
      devices: mesh.devices,
    };
    const ones = new Uint8Array(new Float32Array(32).fill(1.5).buffer);
    const { outputs, data } = await client.execute(program, [ones, ones]);
    expect(outputs.leaves).toHaveLength(5);
    expect(Array.from(new Float32Array(data[1].buffer))).toEqual(new Array(32).fill(3));
  });

  test("PEM given as text works as well as bytes", async () => {
    const client = await connect({
      ca: pem(certs, "ca.pem").toString(),
      cert: pem(certs, "client.pem").toString(),
      key: pem(certs, "client.key").toString(),
    });
    expect(client.version).toBeGreaterThanOrEqual(0);
  });

  test.each([
    ["no client certificate", () => ({ ca: pem(certs, "ca.pem") })],
    [
      "a certificate from another CA",
      () => ({
        ca: pem(certs, "ca.pem"),
        cert: pem(other, "client.pem"),
        key: pem(other, "client.key"),
      }),
    ],
    ["plaintext", () => undefined],
  ])("a client with %s is refused (UNAVAILABLE)", async (_, tls) => {
    const error = await refusal(connect(tls()));
    expect(error.code).toBe(status.UNAVAILABLE);
  });

  test("a client that does not trust the worker's CA is refused", async () => {
    const tls = {
      ca: pem(other, "ca.pem"),
      cert: pem(certs, "client.pem"),
      key: pem(certs, "client.key"),
    };
    const error = await refusal(connect(tls));
    expect(error.code).toBe(status.UNAVAILABLE);
  });

  test("a certificate without its key, or tls with credentials, is a TypeError before any call", async () => {
    await expect(
      connect({ ca: pem(certs, "ca.pem"), cert: pem(certs, "client.pem") }),
    ).rejects.toThrow("mutual TLS needs both tls.cert and tls.key");
    await expect(
      WorkerClient.connect(target, { tls: {}, credentials: credentials.createInsecure() }),
    ).rejects.toThrow("give tls or credentials, not both");
  });
});

describe("--allow-pickle on a non-loopback address", () => {
  test.each([
    ["without TLS", [] as string[]],
    ["with TLS but no --client-ca", tlsFlags(certs)],
  ])("%s: the worker refuses to start and says why", (_, flags) => {
    const run = spawnSync(
      PYTHON,
      [
        "-m",
        "colocated_wire.worker",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--allow-pickle",
        ...flags,
      ],
      { cwd: ROOT, encoding: "utf8" },
    );
    expect(run.status).toBe(2);
    expect(run.stdout).not.toContain("listening");
    expect(run.stderr).toContain(
      "--allow-pickle on 0.0.0.0, which is not a loopback address, needs mutual TLS" +
        " (--tls-cert, --tls-key and --client-ca)",
    );
  });
});
