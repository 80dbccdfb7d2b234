import { Client, credentials } from "@grpc/grpc-js";
import { ColocatedWorkerServiceService } from "../gen/ts/colocated/v1/service";
import { channelOptions, FLOW_CONTROL_WINDOW } from "../src/rpc/client/channel";
import { DEFAULT_DEADLINE_MS } from "../src/rpc/client/client";
import { RETRY_POLICY } from "../src/rpc/client/retry-policy";

describe("channelOptions", () => {
  test("every channel opens a wide receive window, with or without gzip, over the base options", () => {
    const base = { "grpc.max_receive_message_length": 1 << 20 };
    for (const compression of ["none", "gzip"] as const) {
      const options = channelOptions({ compression }, base);
      expect(options["grpc-node.flow_control_window"]).toBe(FLOW_CONTROL_WINDOW);
      expect(options["grpc.max_receive_message_length"]).toBe(1 << 20);
    }
    expect(FLOW_CONTROL_WINDOW).toBeGreaterThanOrEqual(4 << 20); // past one 1 MiB chunk, several
  });

  test("a base that names its own window keeps it", () => {
    const options = channelOptions({}, { "grpc-node.flow_control_window": 1 << 20 });
    expect(options["grpc-node.flow_control_window"]).toBe(1 << 20);
  });

  test("calls the worker refused at admission are retried by gRPC's own policy, streams are not", () => {
    for (const compression of ["none", "gzip"] as const) {
      const config = JSON.parse(channelOptions({ compression })["grpc.service_config"] as string);
      const service = "colocated.v1.ColocatedWorkerService";
      expect(config).toEqual({
        methodConfig: [
          {
            name: ["GetVersion", "GetTopology", "LoadProgram", "Execute"].map((method) => ({
              service,
              method,
            })),
            retryPolicy: {
              maxAttempts: 5,
              initialBackoff: "0.2s",
              maxBackoff: "2s",
              backoffMultiplier: 2,
              retryableStatusCodes: ["RESOURCE_EXHAUSTED"],
            },
          },
        ],
      });
    }
    // Every unary method of the service is retried; the streaming methods are not.
    const methods = Object.values(ColocatedWorkerServiceService);
    expect(methods.filter((m) => m.requestStream).map((m) => m.path)).toEqual([
      "/colocated.v1.ColocatedWorkerService/ExecuteSharded",
      "/colocated.v1.ColocatedWorkerService/Session",
      "/colocated.v1.ColocatedWorkerService/Relay",
    ]);
    expect(methods.filter((m) => !m.requestStream)).toHaveLength(4);
    // grpc-js checks a service config as it makes the channel, and throws on a bad one.
    new Client("127.0.0.1:1", credentials.createInsecure(), channelOptions({})).close();
    // Every retry, jittered up by 20%, fits well within the default deadline.
    let backoff = Number.parseFloat(RETRY_POLICY.initialBackoff);
    let waited = 0;
    for (let retry = 1; retry < RETRY_POLICY.maxAttempts; retry++) {
      waited += 1.2 * backoff;
      backoff = Math.min(
        backoff * RETRY_POLICY.backoffMultiplier,
        Number.parseFloat(RETRY_POLICY.maxBackoff),
      );
    }
    expect(waited * 1000).toBeLessThan(DEFAULT_DEADLINE_MS / 5);
  });

  test("a base that names its own service config keeps it", () => {
    const options = channelOptions({}, { "grpc.service_config": "{}" });
    expect(options["grpc.service_config"]).toBe("{}");
  });
});
